"""`tfsem serve`'s limits with jobs that misbehave on purpose (see
test_serve_support.JOBS): a job that ignores its budget is stopped by force,
a job that allocates without bound hits the memory cap, a crashing job is a
500 and a dying worker an `unknown`, all without hurting the server; past the
concurrency bound requests get 503; SIGINT stops everything cleanly."""

from __future__ import annotations

import signal
import threading
import time

import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

from test_serve_support import Server, misbehaving_program, wait_gone  # noqa: E402


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    # one worker, one waiting request at most, for half a second
    s = Server(tmp_path_factory.mktemp("campaigns"), "--workers", "1", "--queue", "1",
               "--queue-wait", "0.5", "--max-timeout", "5", "--worker-memory", "256",
               jobs_module="test_serve_support")
    yield s
    s.stop()


def health(s: Server) -> dict:
    return s.get("/v1/health").json()["workers"]


def wait_for_worker(s: Server, restarts: int) -> None:
    """Until `restarts` workers were started in place of stopped ones and a
    worker is idle."""
    deadline = time.monotonic() + 30
    while not (health(s)["restarts"] >= restarts and health(s)["idle"] >= 1):
        assert time.monotonic() < deadline, "no fresh worker"
        time.sleep(0.05)


def outcomes_of(kind: str, **extra) -> dict:
    return {"program": misbehaving_program(kind), **extra}


def test_a_job_past_its_deadline_is_stopped(server):
    before = health(server)
    started = time.monotonic()
    ans = server.post("/v1/outcomes", outcomes_of("sleep", timeout=0.4))
    elapsed = time.monotonic() - started
    assert ans.status == 200, ans
    assert ans.json() == {"verdict": "unknown", "reason": ans.json()["reason"]}
    assert "time limit" in ans.json()["reason"]
    # budget 0.4 s, deadline 0.4 + 0.5 grace + 0.1: stopped well before the job's 60 s
    assert elapsed < 5
    assert wait_gone(before["pids"])
    wait_for_worker(server, before["restarts"] + 1)
    ok = server.post("/v1/outcomes", outcomes_of("ok"))
    assert ok.status == 200 and ok.json()["count"] == 1


def test_a_crashing_job_is_a_500_and_the_worker_lives_on(server):
    wait_for_worker(server, 0)
    pids = health(server)["pids"]
    ans = server.post("/v1/outcomes", outcomes_of("fail"))
    assert ans.status == 500
    assert ans.json()["error"] == "internal error" and "KeyError" in ans.json()["message"]
    assert health(server)["pids"] == pids


def test_a_dying_worker_is_unknown_and_replaced(server):
    wait_for_worker(server, 0)
    before = health(server)
    ans = server.post("/v1/outcomes", outcomes_of("die"))
    assert ans.status == 200 and ans.json()["verdict"] == "unknown"
    assert "died" in ans.json()["reason"]
    wait_for_worker(server, before["restarts"] + 1)
    assert server.post("/v1/outcomes", outcomes_of("ok")).json()["count"] == 1


def test_a_runaway_allocation_hits_the_memory_cap(server):
    wait_for_worker(server, 0)
    before = health(server)
    ans = server.post("/v1/outcomes", outcomes_of("hog"))
    assert ans.status == 200 and ans.json()["verdict"] == "unknown"
    assert "memory limit" in ans.json()["reason"]
    wait_for_worker(server, before["restarts"] + 1)


def test_an_answer_too_large_is_unknown_and_the_worker_replaced(server):
    wait_for_worker(server, 0)
    before = health(server)
    ans = server.post("/v1/outcomes", outcomes_of("big"))
    assert ans.status == 200 and ans.json()["verdict"] == "unknown"
    assert "size limit" in ans.json()["reason"]
    wait_for_worker(server, before["restarts"] + 1)
    assert server.post("/v1/outcomes", outcomes_of("ok")).json()["count"] == 1


def test_past_the_concurrency_bound_requests_get_503(server):
    wait_for_worker(server, 0)
    restarts = health(server)["restarts"]
    answers = []

    def call(kind: str, delay: float) -> None:
        time.sleep(delay)
        answers.append(server.post("/v1/outcomes", outcomes_of(kind, timeout=1.5)))

    # a 1.5 s job holds the one worker; the next request waits 0.5 s and gets
    # 503; the third finds the queue full and gets 503 at once
    threads = [threading.Thread(target=call, args=("sleep", 0.0)),
               threading.Thread(target=call, args=("ok", 0.3)),
               threading.Thread(target=call, args=("ok", 0.5))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    statuses = sorted(a.status for a in answers)
    assert statuses == [200, 503, 503], answers
    busy = [a for a in answers if a.status == 503]
    assert all(a.headers.get("retry-after") == "1" and a.json()["error"] == "busy" for a in busy)
    assert health(server)["refused"] >= 2
    wait_for_worker(server, restarts + 1)
    assert server.post("/v1/outcomes", outcomes_of("ok")).status == 200


def test_sigint_stops_server_and_workers(tmp_path):
    s = Server(tmp_path, "--workers", "2", jobs_module="test_serve_support")
    pids = health(s)["pids"]
    assert len(pids) == 2
    # a request in flight when the signal comes is answered, not dropped
    result = {}
    t = threading.Thread(target=lambda: result.update(a=s.post("/v1/outcomes", outcomes_of("sleep", timeout=0.5))))
    t.start()
    time.sleep(0.2)
    assert s.stop(signal.SIGINT) == 0, s.stderr_text()
    t.join(10)
    assert result["a"].status == 200 and result["a"].json()["verdict"] == "unknown"
    assert "tfsem serve: stopped" in s.stdout_rest()
    assert "Traceback" not in s.stderr_text()
    assert wait_gone(pids), "worker processes outlived the server"
