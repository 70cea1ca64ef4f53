"""`tfsem serve`: the verifier as an HTTP service (see README, "tfsem serve").

- `limits.py`: every bound the server enforces, in one place;
- `requests.py`: request bodies decoded and checked, with the command line's
  messages (ProgramError violations) for bad input;
- `jobs.py`: the computations (outcome sets, checks), run in worker processes;
- `workers.py`: the pool of worker processes, with hard time limits;
- `campaign_view.py`: DIR's campaign database and report pages, read live;
- `openapi.py`: the OpenAPI description of every endpoint;
- `app.py`: the Starlette application; `server.py`: uvicorn, sockets, signals;
- `front.py`: the front door (accepts, answers health, hands the rest over),
  run in a process of its own by `door.py`; `heads.py`: request heads, read
  the same way by the door and the connection protocol (`protocol.py`).
"""
