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
#: The most pages one list may have: 10,000 pages are 10 M runs or 250 M points of one
#: metric, far past any store; a list longer than that is a server whose paging never ends.
_MAX_PAGES = 10_000

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


def _json_object(endpoint: str, raw: bytes) -> dict:
    import json

    try:
        doc = json.loads(raw)
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


def _pages(base: str, endpoint: str, items: str, request: dict, post: bool) -> Iterator[dict]:
    """Every item of a paged list (``items``, with ``next_page_token``), page after page.

    Raises:
        ServerError: a page token comes again, or the list goes on past
            :data:`_MAX_PAGES` pages (a server whose paging does not end).
    """
    seen: set[str] = set()
    token = None
    for _ in range(_MAX_PAGES):
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
    raise ServerError(f"{endpoint}: more than {_MAX_PAGES} pages: the paging does not end")


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
    if isinstance(v, (int, float)):
        f = float(v)
    elif isinstance(v, str) and v in ("NaN", "Infinity", "-Infinity"):
        f = float(v.replace("Infinity", "inf"))
    else:
        return None
    # The SQL store keeps ±Inf as ±max float; read it back as what was logged.
    return math.copysign(math.inf, f) if abs(f) == _MAX_FLOAT else f


def _history(base: str, run_id: str, key: str) -> list[tuple[float, float | None]]:
    """``(step, value)`` of every point of one metric, in the server's order (the SQL
    store's: by time, then step, then value)."""
    out = []
    req = {"run_id": run_id, "metric_key": key, "max_results": _HISTORY_PAGE}
    for m in _pages(base, "metrics/get-history", "metrics", req, post=False):
        step = m.get("step", 0)  # an unset step is 0 (service.proto's default)
        if isinstance(step, str) and re.fullmatch(r"-?\d+", step):
            step = int(step)
        if not isinstance(step, int) or isinstance(step, bool):
            raise ServerError("metrics/get-history: unexpected answer: a step that is not an integer")
        out.append((float(step), _value(m.get("value", 0.0))))
    return out


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
        futures = [pool.submit(_history, base, info["run_id"], k) for k in keys]
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
        started = datetime.fromtimestamp(info["start_time"] / 1000, tz=timezone.utc)
        meta["started"] = started.isoformat(timespec="seconds")
    meta["metric_files"] = list(keys)
    state.meta.update(meta)

    def records() -> Iterator[Record]:
        for key, points in zip(keys, histories):
            label = f"metrics/{key}"
            bad = sum(v is None for _, v in points)
            kept = (Record(s, {key: v}, i) for i, (s, v) in enumerate(points, 1) if v is not None)
            yield from logged_order(kept, state, label)
            if bad:
                state.drop(f"{label}: skipped {bad} value(s) that are not numbers")

    runlog = build_runlog(records(), location, "mlflow", None, (), mapping)
    runlog.meta.update(state.meta)
    runlog.notes[:0] = state.notes
    if state.drops:
        runlog.meta["dropped"] = list(state.drops)
    return runlog
