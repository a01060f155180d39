"""Runs one test module with unittest for ctest: exit 0 when its tests pass, 1 on a failure,
77 (ctest SKIP) when every test was skipped, with the reasons printed."""
import sys
import unittest

module = sys.argv[1]
suite = unittest.defaultTestLoader.loadTestsFromName(module)
result = unittest.TextTestRunner(verbosity=2).run(suite)
if not result.wasSuccessful():
    sys.exit(1)
if result.testsRun and len(result.skipped) == result.testsRun:
    for test, reason in result.skipped:
        print(f"SKIP {test.id()}: {reason}")
    sys.exit(77)
sys.exit(0)
