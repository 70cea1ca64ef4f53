"""The OpenAPI 3.1 description of `tfsem serve`, written by hand.

It is the contract the server's tests fuzz against (tests/test_serve_fuzz.py
draws requests from these schemas), so it says what is accepted exactly:
request objects list every field and allow no other.  Programs and values are
described structurally; what makes a program *valid* (arity, edge kinds,
acyclicity, ...) is SPEC section 1, checked by the same code as the command
line, and a violation is a 400 with the command line's messages.
"""

from __future__ import annotations

from typing import Any

from tfsem import __version__

from .limits import Limits

_REF = "#/components/schemas/"


def _ref(name: str) -> dict:
    return {"$ref": _REF + name}


def _json(schema: dict, description: str) -> dict:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _errors(*codes: int) -> dict:
    text = {400: "Bad input: malformed JSON, a wrong type, an unknown field, an invalid program. "
                 "`messages` are the lines the command line prints for the same input.",
            404: "No such route, or no such finding.",
            405: "The route exists but not with this method.",
            413: "The request body is larger than the server takes.",
            401: "A token is configured and the request lacks it or gives a wrong one: send "
                 "`Authorization: Bearer TOKEN` (pages: the login form at /login sets a cookie).",
            415: "A POST body must be sent with Content-Type: application/json.",
            421: "The request is addressed to a host name this server does not answer for (a server "
                 "on loopback answers only requests for loopback names).",
            501: "This installation lacks the part that would answer.",
            503: "Every worker is busy and the queue is full or waited too long; retry later "
                 "(see the Retry-After header)."}
    return {str(c): _json(_ref("Error"), text[c]) for c in codes}


def openapi_document(limits: Limits | None = None) -> dict[str, Any]:
    lim = limits or Limits()
    value = {
        "description": "A value (docs/program-format.md): an int64 as a number or nested lists, "
                       "{\"dtype\": \"float32\", \"value\": ...} (\"nan\", \"inf\", \"-inf\" as strings), "
                       "or an error {\"error\": REASON}.",
        "oneOf": [
            {"type": "number", "description": "an int64 (an integer), or a float32 for a feed or "
                                              "variable declared float32"},
            {"type": "array", "items": {}},
            {"type": "object", "properties": {"dtype": {"enum": ["int64", "float32"]}, "value": {}},
             "required": ["dtype", "value"], "additionalProperties": False},
            {"type": "object", "properties": {"error": {"type": "string", "minLength": 1}},
             "required": ["error"], "additionalProperties": False},
        ],
    }
    tensor_type = {
        "type": "object",
        "properties": {"dtype": {"enum": ["int64", "float32"]},
                       "shape": {"type": "array", "items": {"type": "integer", "minimum": 0}}},
        "additionalProperties": False,
    }
    node = {
        "type": "object",
        "description": "A node: `op` is Var (with `var`), Read, Assign (with `fn`), Write, AssignAdd, "
                       "or a registry function (Add, Const with `value`, ...).",
        "properties": {
            "name": {"type": "string", "minLength": 1},
            "op": {"type": "string"},
            "inputs": {"type": "array", "items": {"type": "string", "minLength": 1},
                       "description": "\"n\", \"n:k\", \"^n\", \"$feed\" or \"^$feed\""},
            "var": {"type": "string"},
            "fn": {"type": "string"},
            "value": _ref("Value"),
        },
        "required": ["name", "op"],
        "additionalProperties": False,
    }
    program = {
        "type": "object",
        "description": f"A tfsem.program/1 program (docs/program-format.md); at most {lim.max_nodes} nodes and "
                       f"{lim.max_elements} elements per declared tensor type on this server.",
        "properties": {
            "format": {"const": "tfsem.program/1"},
            "variables": {"oneOf": [{"type": "array", "items": {"type": "string", "minLength": 1}},
                                    {"type": "object", "additionalProperties": _ref("TensorType")}]},
            "feeds": {"type": "object", "additionalProperties": _ref("TensorType")},
            "nodes": {"type": "array", "items": _ref("Node"), "maxItems": lim.max_nodes},
            "outputs": {"type": "object", "additionalProperties": {"type": "string", "minLength": 1}},
            "updates": {"type": "array", "description": "the multi-variable updates TensorFlow runs "
                        "as one kernel (an imported ResourceApplyAdam, ...), which sessions check "
                        "again across runs (docs/stateful-ops.md)",
                        "items": {"type": "object", "required": ["nodes", "variables"],
                                  "additionalProperties": False,
                                  "properties": {
                                      "nodes": {"type": "array", "minItems": 1,
                                                "items": {"type": "string"}},
                                      "variables": {"type": "array", "minItems": 1,
                                                    "items": {"type": "string"}},
                                      "where": {"type": "string"}}}},
        },
        "required": ["nodes"],
        "additionalProperties": False,
    }
    semantics = {"enum": ["atomic", "decomposed"], "default": "atomic"}
    observe = {"enum": ["outputs+state", "outputs"], "default": "outputs+state"}
    timeout = {"type": "number", "exclusiveMinimum": 0, "default": lim.default_timeout,
               "description": f"seconds; capped at {lim.max_timeout:g}. Past it the answer is the "
                              "verdict `unknown`."}
    check_request = {
        "type": "object",
        "description": "A rewrite to check. A whole tfsem.case/1 object (docs/program-format.md) is accepted as is.",
        "properties": {
            "original": _ref("Program"),
            "rewritten": {"description": "The rewritten program (see Program). Any JSON value is "
                                         "taken: a malformed one is the verdict `invalid`, not bad "
                                         "input."},
            "semantics": semantics, "observe": observe, "timeout": timeout,
            "format": {"const": "tfsem.case/1"},
            "expect": {"enum": ["sound", "unsound", "invalid"]},
            "note": {"type": "string"},
        },
        "required": ["original", "rewritten"],
        "additionalProperties": False,
    }
    outcomes_request = {
        "type": "object",
        "properties": {
            "program": _ref("Program"),
            "feeds": {"type": "object", "additionalProperties": _ref("Value"),
                      "description": "a value for every feed the program reads"},
            "init": {"type": "object", "additionalProperties": _ref("Value"),
                     "description": "initial values; a variable left out starts uninitialized"},
            "semantics": semantics, "observe": observe,
            "limit": {"type": "integer", "minimum": 1, "default": lim.max_listed,
                      "description": f"list at most this many outcomes (capped at {lim.max_listed}); "
                                     "`count` stays exact"},
            "timeout": timeout,
            "max_states": {"type": "integer", "minimum": 1, "default": lim.max_states,
                           "description": f"state budget; capped at {lim.max_states}"},
        },
        "required": ["program"],
        "additionalProperties": False,
    }
    value_summary = {
        "type": "object",
        "description": "A value of more than 256 elements that an `unsound` verdict's outcomes "
                       "do not hold in full (docs/json-size.md): its dtype, shape, a digest of "
                       "its elements (equal values, equal digests), its least and greatest "
                       "element. σ is always written in full.",
        "properties": {"dtype": {"type": "string"},
                       "shape": {"type": "array", "items": {"type": "integer", "minimum": 0}},
                       "summary": {"type": "object", "properties": {
                           "elements": {"type": "integer"}, "digest": {"type": "string"}},
                           "required": ["elements", "digest"]}},
        "required": ["dtype", "shape", "summary"],
        "additionalProperties": False,
    }
    part = {"oneOf": [_ref("Value"), _ref("ValueSummary")]}
    outcome = {
        "type": "object",
        "properties": {"outputs": {"type": "object", "additionalProperties": part},
                       "state": {"type": "object", "additionalProperties": part},
                       "schedule": {"type": "array", "items": {"type": "string"}}},
        "required": ["outputs"],
    }
    outcomes_answer = {
        "description": "What `tfsem outcomes --json` prints: the outcome set (`count` exact, at most "
                       "`limit` listed, each with a witness schedule), or the verdict `unknown` when "
                       "a budget ran out.",
        "oneOf": [
            {"type": "object", "properties": {
                "count": {"type": "integer", "minimum": 0},
                "outcomes": {"type": "array", "items": _ref("Outcome")},
                "stats": {"type": "object"}}, "required": ["count", "outcomes", "stats"]},
            {"type": "object", "properties": {"verdict": {"const": "unknown"}, "reason": {"type": "string"}},
             "required": ["verdict", "reason"]},
        ],
    }
    verdict = {
        "type": "object",
        "description": "What `tfsem check --json` prints (docs/verdicts.md).",
        "properties": {
            "verdict": {"enum": ["sound", "unsound", "no-counterexample", "unknown", "invalid"]},
            "differs": {"oneOf": [{"type": "null"},
                                  {"type": "object", "properties": {"output": {"type": "string"}},
                                   "required": ["output"]},
                                  {"type": "object", "properties": {"variable": {"type": "string"}},
                                   "required": ["variable"]}]},
            "counterexample": {"oneOf": [{"type": "null"}, {"type": "object", "properties": {
                "feeds": {"type": "object"}, "init": {"type": "object"},
                "schedule": {"type": "array", "items": {"type": "string"}},
                "outcome": _ref("Outcome"),
                "original_outcomes": {"type": "array", "items": _ref("Outcome")}}}]},
            "reason": {"type": "string"},
            "tried": {"type": "integer"},
            "confirmed": {"type": "array", "items": {"type": "string"}},
            "semantics": {"enum": ["atomic", "decomposed"]},
            "observe": {"enum": ["outputs+state", "outputs"]},
            "stats": {"type": "object"},
        },
        "required": ["verdict"],
    }
    error = {
        "type": "object",
        "properties": {
            "error": {"type": "string"},
            "message": {"type": "string"},
            "messages": {"type": "array", "items": {"type": "string"},
                         "description": "for bad input: one line per violation, as the command line prints"},
            "violations": {"type": "array", "items": {
                "type": "object", "properties": {"where": {"type": "string"}, "rule": {"type": "string"},
                                                 "message": {"type": "string"}},
                "required": ["where", "rule", "message"]}},
        },
        "required": ["error", "message"],
    }
    campaign = {"type": "object", "description": "A campaign: when, budget, settings, version, "
                                                 "and its per-pass statistics.",
                "properties": {"id": {}, "started": {}, "ended": {}, "budget_s": {},
                               "settings": {"type": "object"}, "version": {}, "passes": {"type": "array"}},
                "required": ["id"]}
    finding = {"type": "object", "description": "A finding: pass, kind, status (new, known, fixed), "
                                                "first and last seen, how often seen.",
               "properties": {"id": {}, "pass": {"type": "string"},
                              "kind": {"enum": ["unsound", "invalid", "crash", "timeout"]},
                              "status": {"enum": ["new", "known", "fixed"]}},
               "required": ["id", "pass", "kind"]}
    finding_detail = {"type": "object", "description": "A finding with its minimized case "
                                                       "(tfsem.case/1, replayable with `tfsem check`) "
                                                       "and its verdict.",
                      "properties": {"finding": _ref("Finding"), "case": {"type": ["object", "null"]},
                                     "verdict": {"type": ["object", "null"]}},
                      "required": ["finding"]}
    health = {"type": "object", "properties": {
        "status": {"const": "ok"}, "version": {"type": "string"}, "jobs": {"type": "object"},
        "limits": {"type": "object"}, "workers": {"type": "object"}, "dir": {"type": "string"}},
        "required": ["status", "version"]}

    html = {"description": "A self-contained HTML page.", "content": {"text/html": {"schema": {"type": "string"}}}}
    query = [
        {"name": "pass", "in": "query", "required": False, "schema": {"type": "string"},
         "description": "only this pass's findings"},
        {"name": "kind", "in": "query", "required": False,
         "schema": {"enum": ["unsound", "invalid", "crash", "timeout"]}},
        {"name": "status", "in": "query", "required": False, "schema": {"enum": ["new", "known", "fixed"]}},
    ]
    body = lambda name: {"required": True, "content": {"application/json": {"schema": _ref(name)}}}  # noqa: E731
    doc = {
        "openapi": "3.1.0",
        "info": {"title": "tfsem serve", "version": __version__,
                 "description": "Verification of graph rewrites of TensorFlow-style programs as a service: "
                                "the answers of `tfsem check --json` and `tfsem outcomes --json`, and a "
                                "campaign directory's findings and report pages, live. Request bodies are "
                                f"at most {lim.max_body_bytes} bytes."},
        "paths": {
            "/v1/check": {"post": {
                "operationId": "check", "summary": "Is this rewrite sound? (tfsem check --json)",
                "requestBody": body("CheckRequest"),
                "responses": {"200": _json(_ref("Verdict"), "The verdict."),
                              **_errors(400, 413, 415, 501, 503)}}},
            "/v1/outcomes": {"post": {
                "operationId": "outcomes", "summary": "The outcome set of a program at given inputs "
                                                      "(tfsem outcomes --json)",
                "requestBody": body("OutcomesRequest"),
                "responses": {"200": _json(_ref("OutcomesAnswer"), "The outcomes, or `unknown`."),
                              **_errors(400, 413, 415, 503)}}},
            "/v1/campaigns": {"get": {
                "operationId": "campaigns", "summary": "The campaigns stored in DIR, newest first",
                "responses": {"200": _json({"type": "object", "properties": {
                    "campaigns": {"type": "array", "items": _ref("Campaign")}},
                    "required": ["campaigns"]}, "The campaigns."), **_errors(400)}}},
            "/v1/findings": {"get": {
                "operationId": "findings", "summary": "The findings stored in DIR, filtered",
                "parameters": query,
                "responses": {"200": _json({"type": "object", "properties": {
                    "findings": {"type": "array", "items": _ref("Finding")}},
                    "required": ["findings"]}, "The findings."), **_errors(400)}}},
            "/v1/findings/{id}": {"get": {
                "operationId": "finding", "summary": "One finding with its case and verdict",
                "parameters": [{"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}],
                "responses": {"200": _json(_ref("FindingDetail"), "The finding."), **_errors(404)}}},
            "/": {"get": {"operationId": "report", "summary": "The report's index page, live from DIR's database",
                          "responses": {"200": html}}},
            "/findings/{page}": {"get": {
                "operationId": "findingPage", "summary": "A finding's report page (links from the index)",
                "parameters": [{"name": "page", "in": "path", "required": True, "schema": {"type": "string"}}],
                "responses": {"200": html, **_errors(404)}}},
            "/v1/health": {"get": {"operationId": "health", "summary": "Liveness, version, limits, workers",
                                   "responses": {"200": _json(_ref("Health"), "The server is up.")}}},
            "/openapi.json": {"get": {"operationId": "openapi", "summary": "This document",
                                      "responses": {"200": _json({"type": "object"}, "OpenAPI 3.1")}}},
        },
        "components": {"schemas": {
            "Value": value, "ValueSummary": value_summary, "TensorType": tensor_type, "Node": node, "Program": program,
            "CheckRequest": check_request, "OutcomesRequest": outcomes_request,
            "Outcome": outcome, "OutcomesAnswer": outcomes_answer, "Verdict": verdict,
            "Error": error, "Campaign": campaign, "Finding": finding, "FindingDetail": finding_detail,
            "Health": health,
        }},
    }
    doc["components"]["securitySchemes"] = {"bearer": {
        "type": "http", "scheme": "bearer",
        "description": "Needed when the server has a token (--token-file or TFSEM_TOKEN)."}}
    for path, item in doc["paths"].items():
        for op in item.values():
            op["responses"].update(_errors(421))
            if path != "/v1/health":
                op["responses"].update(_errors(401))
                op["security"] = [{"bearer": []}, {}]
    return doc
