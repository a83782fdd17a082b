"""An MLflow tracking server as a PATH of ``doctor`` and ``judge``: runs read over its REST
API (``/api/2.0/mlflow/...``) with the standard library only; MLflow is never imported.

A URL ``http(s)://host[:port][/]`` with no path is a tracking server; the UI's own URLs
narrow it: ``…/#/experiments/<id>`` (one experiment) and
``…/#/experiments/<id>/runs/<run id>`` (one run). :func:`discover` lists the live runs
(``experiments/search``, then ``runs/search``, both paged) and gives each as the run's UI
URL: a plain string, so judging stays a pure function of the location and a process pool
or a cluster worker fetches its run itself. :func:`read_runlogs` of a run's URL fetches the
run (``runs/get``), its experiment's name (``experiments/get``) and every metric's full
history (``metrics/get-history``, paged, a few metrics at a time), and reads each metric as
the file store reader reads its file (:func:`trainproof.formats.mlflow.logged_order`).

Credentials come from MLflow's own variables, as its client uses them: a user name and
password (``MLFLOW_TRACKING_USERNAME``, ``MLFLOW_TRACKING_PASSWORD``: HTTP Basic) or else
a token (``MLFLOW_TRACKING_TOKEN``: Bearer). They are sent in a header only, never put in
a location, a note or an error, and a URL that carries a user or password is refused.
What the server answers may echo them: every output masks them in every form
(:mod:`trainproof.redact`). Every request has a deadline, ``MLFLOW_HTTP_REQUEST_TIMEOUT``
seconds (default :data:`DEFAULT_TIMEOUT`, MLflow's), for its whole answer; redirects are
not followed (the credentials would travel to wherever they point): a redirect is an
error, and nothing is sent to its target.

A server that cannot be reached, does not answer in time, or answers something that is
not the API's JSON raises :class:`ServerError`, a :class:`~trainproof.formats.ReadError`
whose text is one line naming what failed (the caller names the URL).
"""

from __future__ import annotations

import math
import os
import re
import threading
from collections.abc import Iterator, Mapping, Sequence
from urllib.parse import urlsplit

from .remote import RemoteError

__all__ = ["DEFAULT_TIMEOUT", "ServerError", "discover", "is_tracking_server", "read_runlogs"]

#: Seconds a request may take, whole answer included, unless ``MLFLOW_HTTP_REQUEST_TIMEOUT``
#: says otherwise (MLflow's client uses the same variable and default).
DEFAULT_TIMEOUT = 120.0

#: The REST API's root below the server's URL (``mlflow/server/handlers.py``:
#: ``_get_rest_path``).
_API = "/api/2.0/mlflow/"

#: Points asked for per ``metrics/get-history`` page: a page of JSON stays a few MB.
_HISTORY_PAGE = 25000
#: Runs per ``runs/search`` page (the server's default page and well below its cap of 50000).
_RUNS_PAGE = 1000
#: Experiments per ``experiments/search`` page.
_EXPERIMENTS_PAGE = 1000
#: Experiment ids per ``runs/search`` request.
_IDS_PER_SEARCH = 50
#: Metrics fetched at once for one run.
_THREADS = 4
#: The most bytes one answer may have.
_MAX_ANSWER = 64 << 20
#: The most pages one list may have: 10,000 pages are 10 M runs, far past any store; a
#: list longer than that is a server whose paging never ends.
_MAX_PAGES = 10_000
#: The most points read of one metric's history (its pages stop there): the records cap
#: of a run read from a file (``runlog.MAX_RECORDS``), one point per logged step.
MAX_POINTS_PER_METRIC = 5_000_000
#: The most points read for one run, every metric together: the values cap of a run read
#: from a file (``runlog.MAX_VALUES``), so a run costs the same memory whichever way it is
#: read. Each metric may read its share (this over the number of metrics, at most
#: :data:`MAX_POINTS_PER_METRIC`): a fixed share, so the same server gives the same points
#: whatever order the metrics' pages arrive in. A metric cut short is judged on its first
#: points and ``TP-DATA-DROPPED`` says so.
MAX_POINTS_PER_RUN = 20_000_000
#: The most pages of one metric's history: :data:`MAX_POINTS_PER_METRIC` in pages of 5,000
#: points (the server's pages are :data:`_HISTORY_PAGE` points but the last); a history
#: longer than that is a server whose paging does not end, and the run is not read.
MAX_HISTORY_PAGES = 1_000
#: The most bytes of answers read from one server in one process (every request
#: together): past it the server is not read further (a :class:`ServerError`). 16 GiB is
#: about 300 M points of history, 15 runs at :data:`MAX_POINTS_PER_RUN`.
MAX_BYTES_PER_SERVER = 16 << 30

#: The ``#`` part of a UI URL: an experiment, or one of its runs (a run's page may go on:
#: ``/runs/<id>/model-metrics``).
_FRAGMENT = re.compile(r"^/?experiments/(?P<exp>[^/?]+)(?:/runs/(?P<run>[^/?]+)(?:/[^?]*)?)?/?(?:\?.*)?$")
#: Ids as the server gives them (MLflow's are digits and hex); anything else would not
#: survive a location string.
_ID = re.compile(r"^[A-Za-z0-9_.\-]{1,200}$")
#: The SQL store keeps ±Inf as ±max float (``sqlalchemy_store.sanitize_metric_value``).
_MAX_FLOAT = 1.7976931348623157e308


class ServerError(RemoteError):
    """The tracking server cannot be reached, does not answer in time, refuses the request,
    or answers something that is not its API's JSON. ``str(err)``: one line."""


def _parts(url) -> tuple[str, str | None, str | None] | None:
    """``(base, experiment id, run id)`` of a tracking-server URL (ids ``None`` where the
    URL does not narrow to one), or ``None`` when ``url`` is not one."""
    if not isinstance(url, str):
        return None
    try:
        u = urlsplit(url)
        u.port  # noqa: B018 - a port that is not a number raises here
    except ValueError:
        return None
    if u.scheme.lower() not in ("http", "https") or not u.hostname or u.query:
        return None
    path = u.path.rstrip("/")
    # A server behind a path prefix (``mlflow server --static-prefix /mlflow``, a reverse
    # proxy): its API lies under the prefix, as MLflow's client takes it. A last segment
    # with a dot names a file (``…/metrics.jsonl``): a log to fetch, not a server.
    if path and "." in path.rsplit("/", 1)[-1]:
        return None
    exp = run = None
    if u.fragment:
        m = _FRAGMENT.match(u.fragment)
        if m is None:
            return None
        exp, run = m.group("exp"), m.group("run")
    host = u.netloc.rpartition("@")[2]
    return f"{u.scheme.lower()}://{host}{path}", exp, run


def is_tracking_server(url) -> bool:
    """Whether ``url`` names an MLflow tracking server: ``http(s)://host[:port]``, with a
    path prefix the server lies under (``/mlflow``; a last segment holding a dot names a
    file instead), or the UI's URL of one of its experiments or runs. Imports nothing and
    touches no network."""
    return _parts(url) is not None


def _split(url: str) -> tuple[str, str | None, str | None]:
    parts = _parts(url)
    if parts is None:
        raise ServerError("not an MLflow tracking server URL (http://host:port)")
    if "@" in urlsplit(url).netloc:
        raise ServerError(
            "credentials in the URL are not used: set MLFLOW_TRACKING_USERNAME and "
            "MLFLOW_TRACKING_PASSWORD, or MLFLOW_TRACKING_TOKEN"
        )
    return parts


def run_location(base: str, experiment_id: str, run_id: str) -> str:
    """The UI URL of a run, the location :func:`discover` gives for it."""
    return f"{base}/#/experiments/{experiment_id}/runs/{run_id}"


# --- requests ---------------------------------------------------------------------------


def _timeout() -> float:
    raw = os.environ.get("MLFLOW_HTTP_REQUEST_TIMEOUT")
    if raw is None or not raw.strip():
        return DEFAULT_TIMEOUT
    try:
        t = float(raw)
    except ValueError:
        t = math.nan
    if not (math.isfinite(t) and t > 0):
        raise ServerError(f"MLFLOW_HTTP_REQUEST_TIMEOUT must be a positive number of seconds, not {raw[:40]!r}")
    return t


def _auth_header() -> str | None:
    """The ``Authorization`` header MLflow's client would send (``rest_utils``: Basic when
    a user name and a password are both set, else Bearer with a token)."""
    import base64

    user, password = os.environ.get("MLFLOW_TRACKING_USERNAME"), os.environ.get("MLFLOW_TRACKING_PASSWORD")
    if user and password:
        return "Basic " + base64.standard_b64encode(f"{user}:{password}".encode()).decode("ascii")
    token = os.environ.get("MLFLOW_TRACKING_TOKEN")
    return f"Bearer {token}" if token else None


def _clean(text: str, limit: int = 200) -> str:
    """``text`` as one short line with no credential in it, in any form (a server may echo
    anything): masked before it is cut, so that a cut cannot leave part of one."""
    from .redact import mask

    text = " ".join(mask(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _opener():
    import urllib.request

    class _NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, req, fp, code, msg, headers, newurl):
            return None  # the 30x answer is raised as an HTTPError, reported below

    return urllib.request.build_opener(_NoRedirect)


def _call(base: str, endpoint: str, params: Mapping | None = None, body: Mapping | None = None) -> dict:
    """The JSON object the API answers at ``endpoint`` (GET with ``params``, or POST of
    ``body``), within :func:`_timeout` seconds for the whole request.

    The socket's timeout bounds each read only, so a server that trickles its headers or
    its body a byte at a time would hold a read for ever: the request runs in a daemon
    thread and is abandoned at the deadline.

    Raises:
        ServerError: no connection, no complete answer within the timeout, an HTTP error,
            or an answer that is not a JSON object.
    """
    import threading

    timeout = _timeout()
    out: dict = {}

    def request() -> None:
        try:
            out["doc"] = _request(base, endpoint, params, body, timeout)
        except BaseException as e:  # handed to the caller's thread
            out["error"] = e

    worker = threading.Thread(target=request, name="trainproof-mlflow-request", daemon=True)
    worker.start()
    # The worker's own deadline check ends it a read later; the margin lets it report that.
    worker.join(timeout + 1.0)
    if worker.is_alive():
        raise ServerError(
            f"{endpoint}: no complete answer within {timeout:g} s (MLFLOW_HTTP_REQUEST_TIMEOUT sets the limit)"
        )
    if "error" in out:
        raise out["error"]
    return out["doc"]


def _request(base: str, endpoint: str, params: Mapping | None, body: Mapping | None, timeout: float) -> dict:
    """:func:`_call`'s request itself, in the calling thread (each read waits at most
    ``timeout`` seconds; the body is read as it arrives, the deadline checked between
    reads)."""
    import json
    import socket
    import time
    import urllib.error
    import urllib.request
    from urllib.parse import urlencode

    url = base + _API + endpoint
    data = None
    headers = {"Accept": "application/json", "User-Agent": "trainproof"}
    if params:
        url += "?" + urlencode(params, doseq=True)
    if body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    auth = _auth_header()
    if auth is not None:
        headers["Authorization"] = auth
    deadline = time.monotonic() + timeout
    req = urllib.request.Request(url, data=data, headers=headers, method="POST" if body is not None else "GET")
    try:
        with _opener().open(req, timeout=timeout) as resp:
            chunks, size = [], 0
            while True:
                if time.monotonic() > deadline:
                    raise TimeoutError
                chunk = resp.read1(1 << 16)  # what has arrived: read() would wait for all of it
                if not chunk:
                    break
                size += len(chunk)
                if size > _MAX_ANSWER:
                    raise ServerError(f"{endpoint}: the answer is over {_MAX_ANSWER >> 20} MiB")
                _count_bytes(base, len(chunk))
                chunks.append(chunk)
            raw = b"".join(chunks)
    except urllib.error.HTTPError as e:
        raise ServerError(_http_error(endpoint, e)) from None
    except (TimeoutError, socket.timeout):
        raise ServerError(
            f"{endpoint}: no answer within {timeout:g} s (MLFLOW_HTTP_REQUEST_TIMEOUT sets the limit)"
        ) from None
    except urllib.error.URLError as e:
        reason = e.reason
        if isinstance(reason, (TimeoutError, socket.timeout)):
            raise ServerError(f"{endpoint}: no answer within {timeout:g} s") from None
        if isinstance(reason, ConnectionRefusedError):
            text = "connection refused (is the server running?)"
        elif isinstance(reason, socket.gaierror):
            text = "unknown host"
        else:
            text = _clean(str(getattr(reason, "strerror", None) or reason))
        raise ServerError(f"cannot connect: {text}") from None
    except (OSError, ValueError) as e:  # a connection reset or a broken answer mid-read
        raise ServerError(f"{endpoint}: the connection failed: {_clean(str(e) or type(e).__name__)}") from None
    return _json_object(endpoint, raw)


#: Bytes of answers read so far from each server (by base URL) in this process.
_BYTES_READ: dict[str, int] = {}


def _count_bytes(base: str, n: int) -> None:
    """Count ``n`` more bytes read from ``base``.

    Raises:
        ServerError: past :data:`MAX_BYTES_PER_SERVER`.
    """
    with _BYTES_LOCK:
        total = _BYTES_READ[base] = _BYTES_READ.get(base, 0) + n
    if total > MAX_BYTES_PER_SERVER:
        raise ServerError(
            f"more than {MAX_BYTES_PER_SERVER >> 30} GiB read from the server: it is not read further "
            "(a server that does not stop answering?)"
        )


_BYTES_LOCK = threading.Lock()


def _json_object(endpoint: str, raw: bytes) -> dict:
    from .formats import decode_json

    try:
        # The readers' decoder: an integer of more digits than Python parses reads as a
        # float (±inf), a document nested past the recursion limit is a ValueError.
        doc = decode_json(raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        head = raw[:200].lstrip().lower()
        what = "an HTML page" if head.startswith((b"<!doctype html", b"<html")) else "not JSON"
        raise ServerError(f"{endpoint}: the answer is {what}: not an MLflow tracking server?") from None
    if not isinstance(doc, dict):
        raise ServerError(f"{endpoint}: the answer is not a JSON object: not an MLflow tracking server?")
    return doc


def _http_error(endpoint: str, e) -> str:
    """One line for an HTTP error answer: MLflow's ``{"error_code", "message"}`` when it
    sent one."""
    code = e.code
    if 300 <= code < 400:
        return f"{endpoint}: HTTP {code}, a redirect (not followed): give the URL it points to"
    if code in (401, 403):
        return (
            f"{endpoint}: HTTP {code}, not allowed: set MLFLOW_TRACKING_TOKEN, or MLFLOW_TRACKING_USERNAME "
            "and MLFLOW_TRACKING_PASSWORD"
        )
    detail = ""
    try:
        doc = _json_object(endpoint, e.read(1 << 16))
        parts = [str(doc[k]) for k in ("error_code", "message") if isinstance(doc.get(k), str)]
        detail = ": " + _clean(": ".join(parts)) if parts else ""
    except (ServerError, OSError):
        pass
    return f"{endpoint}: HTTP {code} {_clean(str(e.reason or ''), 60)}".rstrip() + detail


def _field(doc: Mapping, key: str, kind: type, endpoint: str, default=None):
    """``doc[key]`` when it is a ``kind`` (``default`` when absent: the API leaves out
    empty lists and unset fields)."""
    value = doc.get(key, default)
    if value is None and default is None and kind is not dict:
        return None
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise ServerError(f"{endpoint}: unexpected answer: {key!r} is not a {kind.__name__}")
    return value


def _pages(
    base: str, endpoint: str, items: str, request: dict, post: bool, max_pages: int | None = None
) -> Iterator[dict]:
    """Every item of a paged list (``items``, with ``next_page_token``), page after page.

    Raises:
        ServerError: a page token comes again, or the list goes on past ``max_pages``
            pages (:data:`_MAX_PAGES` when ``None``: a server whose paging does not end).
    """
    seen: set[str] = set()
    token = None
    if max_pages is None:
        max_pages = _MAX_PAGES
    for _ in range(max_pages):
        req = dict(request, **({"page_token": token} if token else {}))
        doc = _call(base, endpoint, body=req) if post else _call(base, endpoint, params=req)
        page = _field(doc, items, list, endpoint, [])
        for item in page:
            if not isinstance(item, dict):
                raise ServerError(f"{endpoint}: unexpected answer: an item of {items!r} is not an object")
            yield item
        token = _field(doc, "next_page_token", str, endpoint, "")
        if not token:
            return
        if token in seen or not page:
            raise ServerError(f"{endpoint}: the paging does not advance (the same page token again)")
        seen.add(token)
    raise ServerError(f"{endpoint}: more than {max_pages:,} pages: the paging does not end")


def _id(value, what: str, endpoint: str) -> str:
    if not isinstance(value, str) or not _ID.match(value):
        raise ServerError(f"{endpoint}: unexpected answer: a {what} id that is not an id")
    return value


# --- discovery --------------------------------------------------------------------------


def discover(
    url: str, experiments: Sequence[str] = (), runs: Sequence[str] = (), ignored: list[dict] | None = None
) -> list[str]:
    """The live runs of the tracking server at ``url``, as run locations (UI URLs), in
    experiment order (by id), then by start time.

    Args:
        url: the server (``http://host:5000``), or the UI URL of an experiment or a run,
            which narrows the search to it.
        experiments: experiment names: only their runs.
        runs: run ids: only these runs (still within ``experiments`` when both are given).
        ignored: where runs without any metric are listed (``{"file", "reason"}``).

    Raises:
        ServerError: the server cannot be read (see the module docstring), a named
            experiment or run does not exist.
    """
    base, exp_id, run_id = _split(url)
    if run_id is not None:
        runs = [run_id] if not runs else [r for r in runs if r == run_id]
    exp_ids: list[str] | None = None
    if exp_id is not None:
        exp_ids = [exp_id]
    if experiments:
        named = [_experiment_by_name(base, name) for name in dict.fromkeys(experiments)]
        exp_ids = named if exp_ids is None else [e for e in exp_ids if e in named]
    found: list[dict] = []
    if runs:
        for rid in dict.fromkeys(runs):
            run = _get_run(base, rid)
            if exp_ids is None or run["info"]["experiment_id"] in exp_ids:
                found.append(run)
    else:
        if exp_ids is None:
            exp_ids = _experiment_ids(base)
        for i in range(0, len(exp_ids), _IDS_PER_SEARCH):
            body = {
                "experiment_ids": exp_ids[i : i + _IDS_PER_SEARCH],
                "run_view_type": "ACTIVE_ONLY",
                "max_results": _RUNS_PAGE,
            }
            found.extend(_run_of(r, "runs/search") for r in _pages(base, "runs/search", "runs", body, post=True))
    order = {e: i for i, e in enumerate(exp_ids or ())}
    found.sort(key=lambda r: (order.get(r["info"]["experiment_id"], -1), r["info"]["start_time"], r["info"]["run_id"]))
    out: list[str] = []
    for run in dict((r["info"]["run_id"], r) for r in found).values():
        loc = run_location(base, run["info"]["experiment_id"], run["info"]["run_id"])
        if run["metrics"]:
            out.append(loc)
        elif ignored is not None:
            ignored.append({"file": loc, "reason": "an MLflow run with no metrics logged"})
    return out


def _sort_id(e: str):
    return (0, int(e), "") if e.isdigit() else (1, 0, e)


def _experiment_ids(base: str) -> list[str]:
    req = {"max_results": _EXPERIMENTS_PAGE, "view_type": "ACTIVE_ONLY"}
    ids = [
        _id(e.get("experiment_id"), "experiment", "experiments/search")
        for e in _pages(base, "experiments/search", "experiments", req, post=True)
    ]
    return sorted(dict.fromkeys(ids), key=_sort_id)


def _get(base: str, endpoint: str, params: dict, missing: str) -> dict:
    """The server's answer to ``GET endpoint``; ``missing`` is the one-line reason when
    the server says the thing asked for does not exist (``RESOURCE_DOES_NOT_EXIST``)."""
    try:
        return _call(base, endpoint, params=params)
    except ServerError as e:
        if "RESOURCE_DOES_NOT_EXIST" in str(e):
            raise ServerError(missing) from None
        raise


def _experiment_by_name(base: str, name: str) -> str:
    doc = _get(
        base,
        "experiments/get-by-name",
        {"experiment_name": name},
        f"no experiment named {_clean(name, 80)!r} on the server",
    )
    exp = _field(doc, "experiment", dict, "experiments/get-by-name")
    return _id(exp.get("experiment_id"), "experiment", "experiments/get-by-name")


def _get_run(base: str, run_id: str) -> dict:
    doc = _get(base, "runs/get", {"run_id": run_id}, f"no run with id {_clean(run_id, 80)!r} on the server")
    return _run_of(_field(doc, "run", dict, "runs/get"), "runs/get")


def _run_of(run: dict, endpoint: str) -> dict:
    """A ``Run`` of the API as ``{"info": {run_id, run_name, experiment_id, start_time},
    "metrics": [keys]}``, its shape checked."""
    info = _field(run, "info", dict, endpoint)
    data = _field(run, "data", dict, endpoint, {})
    run_id = _id(info.get("run_id") or info.get("run_uuid"), "run", endpoint)
    keys = []
    for m in _field(data, "metrics", list, endpoint, []):
        if not isinstance(m, dict) or not isinstance(m.get("key"), str):
            raise ServerError(f"{endpoint}: unexpected answer: a metric without a key")
        keys.append(m["key"])
    name = info.get("run_name")
    if not isinstance(name, str) or not name:
        tags = _field(data, "tags", list, endpoint, [])
        name = next((t.get("value") for t in tags if isinstance(t, dict) and t.get("key") == "mlflow.runName"), None)
    start = info.get("start_time")
    return {
        "info": {
            "run_id": run_id,
            "run_name": name if isinstance(name, str) else None,
            "experiment_id": _id(info.get("experiment_id"), "experiment", endpoint),
            "start_time": start if isinstance(start, int) and not isinstance(start, bool) else 0,
        },
        "metrics": sorted(set(keys)),
    }


# --- reading a run ----------------------------------------------------------------------

#: Experiment names already fetched in this process, by ``(base, id)``.
_EXPERIMENT_NAMES: dict[tuple[str, str], str | None] = {}


def _experiment_name(base: str, exp_id: str) -> str | None:
    key = (base, exp_id)
    if key not in _EXPERIMENT_NAMES:
        doc = _call(base, "experiments/get", params={"experiment_id": exp_id})
        name = _field(doc, "experiment", dict, "experiments/get").get("name")
        _EXPERIMENT_NAMES[key] = name if isinstance(name, str) else None
    return _EXPERIMENT_NAMES[key]


def _value(v) -> float | None:
    """A metric's value as the API writes it (a number, or ``"NaN"``/``"Infinity"``/
    ``"-Infinity"``: protobuf's JSON for a double), ``None`` when it is neither."""
    if isinstance(v, bool):
        return None
    if isinstance(v, int) and abs(v) > _MAX_FLOAT:
        # An integer past a double (no server writes one) reads as the infinity it
        # rounds to, as the file readers read it.
        return math.inf if v > 0 else -math.inf
    if isinstance(v, (int, float)):
        f = float(v)
    elif isinstance(v, str) and v in ("NaN", "Infinity", "-Infinity"):
        f = float(v.replace("Infinity", "inf"))
    else:
        return None
    # The SQL store keeps ±Inf as ±max float; read it back as what was logged.
    return math.copysign(math.inf, f) if abs(f) == _MAX_FLOAT else f


#: A step as protobuf's JSON writes an int64: a decimal string (or a number) of at most
#: 19 digits.
_INT64 = re.compile(r"-?\d{1,19}")


def _step(m: Mapping) -> float:
    """A history point's step as a float (an unset step is 0, ``service.proto``'s default).

    Raises:
        ServerError: the step is not an int64 (text, a fraction, more digits than an int64
            holds).
    """
    step = m.get("step", 0)
    if isinstance(step, str) and _INT64.fullmatch(step):
        step = int(step)
    if not isinstance(step, int) or isinstance(step, bool) or not -(2**63) <= step < 2**63:
        raise ServerError("metrics/get-history: unexpected answer: a step that is not an int64")
    return float(step)


def _history(base: str, run_id: str, key: str, share: int = MAX_POINTS_PER_METRIC) -> tuple[list, str | None]:
    """``(points, cut)``: ``(step, value)`` of the first ``share`` points of one metric, in
    the server's order (the SQL store's: by time, then step, then value), and the note for
    a history cut at ``share`` (``None`` when it was read whole).

    Raises:
        ServerError: as :func:`_pages` (past :data:`MAX_HISTORY_PAGES` pages), a step
            that is not an int64.
    """
    out: list[tuple[float, float | None]] = []
    req = {"run_id": run_id, "metric_key": key, "max_results": min(_HISTORY_PAGE, share)}
    pages = _pages(base, "metrics/get-history", "metrics", req, post=False, max_pages=MAX_HISTORY_PAGES)
    for m in pages:
        if len(out) >= share:
            pages.close()
            return out, (
                f"metrics/{key}: only the first {share:,} points were read (a run is read up to "
                f"{MAX_POINTS_PER_RUN:,} points, each of its metrics up to {MAX_POINTS_PER_METRIC:,})"
            )
        out.append((_step(m), _value(m.get("value", 0.0))))
    return out, None


def read_runlogs(url: str, mapping: Mapping[str, str] | None = None) -> list:
    """The RunLogs of the runs at ``url``: one for a run's UI URL, one per live run with
    metrics for a server's or an experiment's URL (as :func:`discover` lists them).

    Each RunLog is named by its run's URL, format ``mlflow``, with ``meta`` ``run`` (the
    run's name), ``run_id``, ``experiment`` (its name), ``started`` (ISO 8601, UTC) and
    ``metric_files`` (the metric keys); a value that is not a number is dropped (noted,
    ``TP-DATA-DROPPED``).

    Raises:
        ServerError: as :func:`discover`; the run does not exist or has no metric.
        aliases.MappingError: ``mapping`` names a metric the run does not have.
    """
    _base, _exp, run_id = _split(url)
    if run_id is None:
        return [rl for loc in discover(url) for rl in read_runlogs(loc, mapping)]
    return [_read_run(url, mapping)]


def _read_run(url: str, mapping: Mapping[str, str] | None):
    from concurrent.futures import ThreadPoolExecutor
    from datetime import datetime, timezone

    from .formats.base import ReadState
    from .formats.mlflow import logged_order
    from .runlog import Record, build_runlog

    base, _exp, run_id = _split(url)
    run = _get_run(base, run_id)
    info = run["info"]
    keys = run["metrics"]
    if not keys:
        raise ServerError("the run has no metrics logged")
    location = run_location(base, info["experiment_id"], info["run_id"])
    experiment = _experiment_name(base, info["experiment_id"])
    with ThreadPoolExecutor(max_workers=min(_THREADS, len(keys))) as pool:
        share = max(1, min(MAX_POINTS_PER_METRIC, MAX_POINTS_PER_RUN // len(keys)))
        futures = [pool.submit(_history, base, info["run_id"], k, share) for k in keys]
        try:
            histories = [f.result() for f in futures]
        except BaseException:
            for f in futures:
                f.cancel()
            raise
    state = ReadState()
    meta: dict = {"run": info["run_name"] or info["run_id"], "run_id": info["run_id"]}
    if experiment:
        meta["experiment"] = experiment
    if info["start_time"] > 0:
        try:
            started = datetime.fromtimestamp(info["start_time"] / 1000, tz=timezone.utc)
        except (OverflowError, ValueError, OSError):  # past the calendar's years: no start time
            started = None
        if started is not None:
            meta["started"] = started.isoformat(timespec="seconds")
    meta["metric_files"] = list(keys)
    state.meta.update(meta)

    def records() -> Iterator[Record]:
        for key, (points, cut) in zip(keys, histories):
            label = f"metrics/{key}"
            bad = sum(v is None for _, v in points)
            kept = (Record(s, {key: v}, i) for i, (s, v) in enumerate(points, 1) if v is not None)
            yield from logged_order(kept, state, label)
            if bad:
                state.drop(f"{label}: skipped {bad} value(s) that are not numbers")
            if cut is not None:
                state.drop(cut)

    runlog = build_runlog(records(), location, "mlflow", None, (), mapping)
    runlog.meta.update(state.meta)
    runlog.notes[:0] = state.notes
    if state.drops:
        runlog.meta["dropped"] = [*state.drops, *runlog.meta.get("dropped", ())]
    return runlog
