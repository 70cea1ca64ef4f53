"""A schema-driven fuzzer for `tfsem serve`: Hypothesis strategies built from
the server's own /openapi.json, sent to a real server process over loopback.

Each example is one request to one documented operation:
- a body drawn from the operation's request schema (structurally valid,
  mostly semantically invalid programs), or such a body mutated (a required
  field dropped, an unknown field added, a field given a wrong type), or raw
  bytes, or a real program or case from the seeds (so some requests compute);
- for GET operations, query and path parameters from their schemas, plus
  unknown ones.

Properties: the status is one the description documents for the operation
(never a 500), the body is JSON (HTML for the pages) matching the documented
response schema, a 400 carries the command line's message lines, and after
all of it the server still answers a known case correctly.

About 50 requests by default (~a few seconds); the `nightly` Hypothesis
profile sends 20 times more.
"""

from __future__ import annotations

import json
import string
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

from test_serve_support import TESTS_DIR, Server  # noqa: E402

from tfsem.generators import families  # noqa: E402
from tfsem.oracle.jsonio import program_to_json  # noqa: E402
from tfsem.oracle.values import value_to_json  # noqa: E402

EXAMPLES = 50


def examples(n: int) -> int:
    return n * 20 if settings.get_current_profile_name() == "nightly" else n


# ---------------------------------------------------------------------------
# JSON Schema (the subset the description uses) -> strategies, and a checker


ANY_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=6)

NAMES = st.sampled_from(["a", "b", "x", "r", "w", "vx", "B", "out", "n:1", "^a", "$B", "^$B", "", "é"])


class Schemas:
    def __init__(self, spec: dict):
        self.spec = spec
        self.components = spec["components"]["schemas"]

    def resolve(self, schema: dict) -> dict:
        while "$ref" in schema:
            schema = self.components[schema["$ref"].rsplit("/", 1)[1]]
        return schema

    def strategy(self, schema: dict, depth: int = 0) -> st.SearchStrategy:
        schema = self.resolve(schema)
        if depth > 5:
            return st.none()
        if "const" in schema:
            return st.just(schema["const"])
        if "enum" in schema:
            return st.sampled_from(schema["enum"])
        if "oneOf" in schema:
            return st.one_of([self.strategy(s, depth + 1) for s in schema["oneOf"]])
        t = schema.get("type")
        if isinstance(t, list):
            return st.one_of([self.strategy(dict(schema, type=x), depth) for x in t])
        if t == "object":
            return self._object(schema, depth)
        if t == "array":
            items = self.strategy(schema.get("items", {}), depth + 1)
            return st.lists(items, max_size=min(4, schema.get("maxItems", 4)))
        if t == "string":
            return NAMES if schema.get("minLength") else NAMES | st.text(string.printable, max_size=6)
        if t == "integer":
            lo = schema.get("minimum", -5)
            return st.integers(lo, lo + 20)
        if t == "number":
            lo = schema.get("exclusiveMinimum", schema.get("minimum", -5))
            return st.floats(lo, lo + 3, exclude_min="exclusiveMinimum" in schema)
        if t == "boolean":
            return st.booleans()
        if t == "null":
            return st.none()
        return ANY_JSON

    def _object(self, schema: dict, depth: int) -> st.SearchStrategy:
        props = schema.get("properties", {})
        required = set(schema.get("required", ()))
        extra = schema.get("additionalProperties", {})

        @st.composite
        def build(draw):
            out = {}
            for name, sub in props.items():
                if name in required or draw(st.booleans()):
                    out[name] = draw(self.strategy(sub, depth + 1))
            if extra is not False and isinstance(extra, dict):
                for key in draw(st.lists(NAMES, max_size=2, unique=True)):
                    out.setdefault(key, draw(self.strategy(extra, depth + 1)))
            return out

        return build()

    def check(self, value: Any, schema: dict, where: str = "$") -> None:
        """Assert `value` matches `schema` (the subset used for responses)."""
        schema = self.resolve(schema)
        if "const" in schema:
            assert value == schema["const"], where
        if "enum" in schema:
            assert value in schema["enum"], (where, value)
        if "oneOf" in schema:
            errors = []
            for alt in schema["oneOf"]:
                try:
                    self.check(value, alt, where)
                    return
                except AssertionError as exc:
                    errors.append(exc)
            raise AssertionError(f"{where}: matches no alternative: {errors}")
        t = schema.get("type")
        types = t if isinstance(t, list) else [t] if t else []
        py = {"object": dict, "array": list, "string": str, "integer": int, "number": (int, float),
              "boolean": bool, "null": type(None)}
        if types:
            assert any(isinstance(value, py[x]) and not (x in ("integer", "number") and isinstance(value, bool))
                       for x in types), (where, types, value)
        if isinstance(value, dict):
            for key in schema.get("required", ()):
                assert key in value, (where, key)
            for key, sub in schema.get("properties", {}).items():
                if key in value:
                    self.check(value[key], sub, f"{where}.{key}")
            if schema.get("additionalProperties") is False:
                assert set(value) <= set(schema.get("properties", {})), where
        if isinstance(value, list) and "items" in schema:
            for i, v in enumerate(value):
                self.check(v, schema["items"], f"{where}[{i}]")


# ---------------------------------------------------------------------------
# Requests


def _sigma(feeds, init) -> tuple[dict, dict]:
    return ({k: value_to_json(v) for k, v in feeds.items()}, {k: value_to_json(v) for k, v in init.items()})


def real_bodies() -> dict[str, list[dict]]:
    """Requests that pass validation, so that some examples compute."""
    outcomes, checks = [], []
    for p, feeds, init in (families.load_store(), families.first_example(False), families.racy_pairs(3),
                           families.increments(3)):
        f, i = _sigma(feeds, init)
        outcomes.append({"program": program_to_json(p), "feeds": f, "init": i})
        checks.append({"original": program_to_json(p), "rewritten": program_to_json(p)})
    for name in ("seed002_load_store_hoist_reads.json", "pass_cse.json", "invalid_unknown_op.json"):
        checks.append(json.loads((TESTS_DIR / "cases" / name).read_text()))
    return {"/v1/outcomes": outcomes, "/v1/check": checks}


WRONG_TYPES = st.sampled_from([None, True, 0, -1, 1.5, "x", [], {}, [1, "a"], {"k": []}])


@st.composite
def mutated(draw, body: dict, schema: dict) -> dict:
    body = dict(body)
    how = draw(st.sampled_from(["drop", "add", "retype"]))
    if how == "drop" and body:
        body.pop(draw(st.sampled_from(sorted(body))))
    elif how == "add":
        body[draw(st.sampled_from(["pass", "module", "__class__", "code", "Original"]))] = draw(WRONG_TYPES)
    elif body:
        body[draw(st.sampled_from(sorted(body)))] = draw(WRONG_TYPES)
    return body


@st.composite
def requests(draw, schemas: Schemas, reals: dict[str, list[dict]]):
    """(method, path, raw body or None, operation's documented responses)."""
    paths = schemas.spec["paths"]
    path = draw(st.sampled_from(sorted(paths)))
    method, op = next(iter(paths[path].items()))
    if method == "post":
        schema = op["requestBody"]["content"]["application/json"]["schema"]
        kind = draw(st.sampled_from(["schema", "mutated", "real", "real-mutated", "bytes"]))
        if kind == "bytes":
            raw = draw(st.binary(max_size=40) | st.sampled_from(
                [b"", b"{", b"null", b"[]", b'{"program": NaN}', b"\xff\xfe", b'{"a":1}' * 3,
                 b'{"program": ' + b"9" * 5000 + b"}", b'{"program": 1e999}', b'"\\ud800"',
                 b"[" * 100 + b"]" * 100]))
        else:
            body = draw(st.sampled_from(reals[path])) if kind.startswith("real") else draw(schemas.strategy(schema))
            if kind.endswith("mutated"):
                body = draw(mutated(body, schemas.resolve(schema)))
            raw = json.dumps(body).encode()
        return "POST", path, raw, op
    query = {}
    for param in op.get("parameters", ()):
        if param["in"] == "path":
            value = draw(st.sampled_from(["1", "0", "abc", "finding-1.html", "%2e%2e", "-1"]))
            path = path.replace("{" + param["name"] + "}", value)
        elif draw(st.booleans()):
            query[param["name"]] = draw(schemas.strategy(param["schema"]) | st.sampled_from(["", "zzz"]))
    if draw(st.integers(0, 4)) == 0:
        query[draw(st.sampled_from(["colour", "limit", "pass_"]))] = "1"
    if query:
        from urllib.parse import urlencode
        path += "?" + urlencode({k: str(v) for k, v in query.items()})
    return "GET", path, None, op


# ---------------------------------------------------------------------------
# The test


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    s = Server(tmp_path_factory.mktemp("campaigns"), "--workers", "2", "--max-timeout", "3")
    yield s
    s.stop()


@pytest.fixture(scope="module")
def schemas(server) -> Schemas:
    return Schemas(server.get("/openapi.json").json())


def test_every_documented_operation_answers_as_documented(server, schemas):
    reals = real_bodies()
    seen: dict[int, int] = {}

    @settings(max_examples=examples(EXAMPLES), deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(requests(schemas, reals))
    def one(request):
        method, path, raw, op = request
        ans = server.request(method, path, raw=raw)
        seen[ans.status] = seen.get(ans.status, 0) + 1
        assert ans.status != 500, (method, path, raw, ans)
        documented = set(op["responses"]) | {"404", "405"}
        assert str(ans.status) in documented, (method, path, raw, ans)
        content = op["responses"].get(str(ans.status), {}).get("content", {})
        if "text/html" in content:
            assert ans.headers["content-type"].startswith("text/html")
            return
        body = ans.json()
        if "application/json" in content:
            schemas.check(body, content["application/json"]["schema"])
        if ans.status == 400:
            assert body["messages"] == [f"{v['where']}: {v['message']} [{v['rule']}]" for v in body["violations"]]
            assert body["messages"], body

    one()
    assert seen.get(400, 0) > 0 and seen.get(200, 0) > 0, seen
    # still serving, still right
    case = json.loads((TESTS_DIR / "cases" / "seed002_load_store_hoist_reads.json").read_text())
    assert server.post("/v1/check", case).json()["verdict"] == "unsound"
    assert server.get("/v1/health").json()["status"] == "ok"
