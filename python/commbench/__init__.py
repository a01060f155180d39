"""commbench's Python side: reading results folders, plots, reports, analysis, compare.

    import commbench
    df = commbench.load("results/quickstart-20250101-120000")   # DataFrame with pandas, else list

docs/output.md ("Reading results from Python") documents the API; the `commbench report`,
`commbench compare` and `commbench check` commands of the C++ CLI run this package's __main__.
"""
from .load import CASE_KEY, CSV_COLUMNS, Job, ResultsError, load, read_job, read_jobs

__all__ = ["load", "read_job", "read_jobs", "Job", "ResultsError", "CASE_KEY", "CSV_COLUMNS"]
