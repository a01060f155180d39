"""commbench's Python side: reading results folders, plots, reports, analysis, compare.

    import commbench
    rows = commbench.load("results/quickstart-20250101-120000")  # flat rows: DataFrame with
                                                                  # pandas, else a list of dicts

docs/output.md ("Reading results from Python") documents the API; the `commbench report`,
`commbench compare` and `commbench check` commands of the C++ CLI run this package's __main__.
"""
from .load import CASE_KEY, CSV_COLUMNS, Job, ResultsError, load, read_job, read_jobs, records

__all__ = ["load", "records", "read_job", "read_jobs", "Job", "ResultsError", "CASE_KEY",
           "CSV_COLUMNS"]
