"""Input validation for results folders read back from disk (docs/output.md, "Reading results
back"): a results.jsonl or summary.json may be damaged, edited by hand or hostile (`1e999`,
nesting a million levels deep, a bare number where a record belongs). Everything is checked
as it is read, and anything wrong raises ResultsError naming the file and line, so `report`,
`compare` and `check` say what is wrong instead of failing somewhere inside with a traceback.
"""
import json
import math

_INT, _NUM, _STR, _BOOL, _NUMS, _NUM_MAP = "an integer", "a number", "a string", "a boolean", \
    "a list of numbers", "an object of numbers"
_INTS, _STR_MAP = "a list of integers", "an object of strings"

# Fields whose type the readers rely on; other fields are passed through untouched (a newer
# schema may add any). None stands for JSON null, which every field may be.
CASE_FIELDS = {
    **{k: _STR for k in ("experiment", "run", "backend", "op", "dtype", "redop", "placement",
                         "memory", "status", "reason", "failure_kind", "timing", "staging", "method",
                         "rank_aggregation", "cpu_binding")},
    **{k: _INT for k in ("run_index", "world_size", "bytes", "total_bytes", "count", "root",
                         "warmup", "iterations", "wrong", "src", "dst", "window", "job_bytes")},
    "peers": _INTS,
    "options": _STR_MAP,
    "env": _STR_MAP,
    **{k: _NUM for k in ("algbw_gbps", "busbw_gbps", "msg_rate_mps", "target_cv")},
    "cv_reached": _BOOL,
    "time_us": _NUM_MAP,
    "samples_us": _NUMS,
    "rank_mean_us": _NUMS,
}
EXECUTION_FIELDS = {
    **{k: _STR for k in ("run", "backend", "status", "reason", "failure_kind", "failed_phase")},
    **{k: _INT for k in ("run_index", "world_size", "exec_index", "exec_total", "case_total",
                         "failed_rank", "plugin_status", "cases_done")},
    "elapsed_s": _NUM,
    "timeout_s": _NUM,
}
JOB_FIELDS = {k: _STR for k in ("experiment", "file", "started_at", "finished_at", "host",
                                "commbench_version")}
JOB_END_FIELDS = {"exit_code": _INT, "finished_at": _STR}


class InvalidInput(ValueError):
    """What is wrong with one value, without the file and line (the reader adds them)."""


def _reject_constant(name):
    raise InvalidInput(f"'{name}' is not a number JSON allows")


def _finite_float(text):
    v = float(text)
    if not math.isfinite(v):
        raise InvalidInput(f"{text} is out of range for a number (it overflows to infinity)")
    return v


def parse_json(text):
    """json.loads that refuses non-finite numbers and nesting deeper than Python's recursion
    limit (its parser raises RecursionError there, which becomes a plain error here)."""
    try:
        return json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float)
    except json.JSONDecodeError as e:
        # A whole file (summary.json) is told by line and column; one line of results.jsonl by
        # column (the reader names the line). A file that stops mid-value was cut short.
        where = f"line {e.lineno}, column {e.colno}" if "\n" in text.rstrip() else f"column {e.colno}"
        # An unterminated string runs to the end of the text too, and so does a literal or number
        # cut inside ("tr", "1e", "-"): the error is at its start, the rest of the text is all it has.
        tail = text[e.pos:].rstrip()
        ends = (e.pos >= len(text.rstrip()) or e.msg.startswith("Unterminated string")
                or any(w.startswith(tail) for w in ("true", "false", "null"))
                or (tail != "" and all(ch in "0123456789+-.eE" for ch in tail)))
        raise InvalidInput(f"not JSON: {e.msg} ({where}){'; the text ends there: cut short' if ends else ''}") from None
    except RecursionError:
        raise InvalidInput("nested too deeply to read (thousands of levels)") from None


def _is_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _matches(v, kind):
    if v is None:
        return True
    if kind == _INT:
        return isinstance(v, int) and not isinstance(v, bool)
    if kind == _NUM:
        return _is_number(v)
    if kind == _STR:
        return isinstance(v, str)
    if kind == _BOOL:
        return isinstance(v, bool)
    if kind == _NUMS:
        return isinstance(v, list) and all(x is None or _is_number(x) for x in v)
    if kind == _NUM_MAP:
        return isinstance(v, dict) and all(x is None or _is_number(x) for x in v.values())
    if kind == _INTS:
        return isinstance(v, list) and all(isinstance(x, int) and not isinstance(x, bool) for x in v)
    if kind == _STR_MAP:
        return isinstance(v, dict) and all(isinstance(x, str) for x in v.values())
    return True


def _type_name(v):
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean",
            int: "an integer", float: "a number"}.get(type(v), type(v).__name__)


def check_fields(obj, fields, what):
    """Raises InvalidInput for the first field of `obj` whose type is not the one readers use."""
    for key, kind in fields.items():
        if key in obj and not _matches(obj[key], kind):
            raise InvalidInput(f"{what}'s field '{key}' is {_type_name(obj[key])}, expected {kind}")


# Line type -> the fields checked for it; the others are ignored, as the schema asks.
LINE_FIELDS = {"case": CASE_FIELDS, "execution": EXECUTION_FIELDS, "job": JOB_FIELDS,
               "job_end": JOB_END_FIELDS, "memory": {}}


def check_line(obj):
    """A results.jsonl line after parsing: an object whose known fields have their types."""
    if not isinstance(obj, dict):
        raise InvalidInput(f"{_type_name(obj)}, not a JSON object: every line is one record")
    kind = obj.get("type")
    if kind is not None and not isinstance(kind, str):
        raise InvalidInput(f"its 'type' is {_type_name(kind)}, expected a string")
    check_fields(obj, LINE_FIELDS.get(kind, {}), f"the {kind} record")


def check_summary(doc):
    """summary.json after parsing: the lists the readers take records from, each checked."""
    if not isinstance(doc, dict):
        raise InvalidInput(f"{_type_name(doc)}, not a JSON object")
    for key in ("experiment", "job"):
        if key in doc and not isinstance(doc[key], dict):
            raise InvalidInput(f"'{key}' is {_type_name(doc[key])}, expected an object")
    for key, fields in (("results", CASE_FIELDS), ("executions", EXECUTION_FIELDS), ("records", {})):
        items = doc.get(key, [])
        if not isinstance(items, list):
            raise InvalidInput(f"'{key}' is {_type_name(items)}, expected a list")
        for i, item in enumerate(items):
            if not isinstance(item, dict):
                raise InvalidInput(f"{key}[{i}] is {_type_name(item)}, expected an object")
            check_fields(item, fields, f"{key}[{i}]")
    if "exit_code" in doc and not _matches(doc["exit_code"], _INT):
        raise InvalidInput(f"'exit_code' is {_type_name(doc['exit_code'])}, expected an integer")
