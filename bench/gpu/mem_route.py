"""Tries one allocation route over and under the job's memory cap.

Usage: mem_route.py ROUTE OVER_GIB UNDER_GIB, ROUTE one of plain,
expandable, async, graph, cupy (the allocator settings come from the
environment the runner gives).  Prints one JSON line: what the device
reports, and "refused" / "ok" for the over- and under-cap attempts.
"""
import json
import sys

GIB = 1 << 30


def refused(e: BaseException) -> bool:
    text = str(e).lower()
    return "out of memory" in text or "outofmemory" in type(e).__name__.lower()


def attempt(alloc, nbytes: int) -> str:
    try:
        x = alloc(nbytes)
        del x
        return "ok"
    except Exception as e:  # the route's own error type
        return "refused" if refused(e) else f"error: {str(e)[:120]}"


def main() -> None:
    route, over, under = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
    out = {"route": route}
    if route == "cupy":
        import cupy

        def alloc(n):
            a = cupy.empty(n, dtype=cupy.uint8)
            a.fill(1)
            return a

        free, total = cupy.cuda.runtime.memGetInfo()
    else:
        import torch

        def plain(n):
            a = torch.empty(n, dtype=torch.uint8, device="cuda")
            a.fill_(1)
            torch.cuda.synchronize()
            return a

        def graph(n):
            g = torch.cuda.CUDAGraph()
            s = torch.cuda.Stream()
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                torch.ones(1, device="cuda")
            torch.cuda.current_stream().wait_stream(s)
            with torch.cuda.graph(g):
                a = torch.empty(n, dtype=torch.uint8, device="cuda")
                a.fill_(1)
            g.replay()
            torch.cuda.synchronize()
            return (g, a)

        alloc = graph if route == "graph" else plain
        free, total = torch.cuda.mem_get_info()
    out["reported_total_gib"] = round(total / GIB, 2)
    out["over"] = attempt(alloc, int(over * GIB))
    out["under"] = attempt(alloc, int(under * GIB))
    out["pass"] = out["over"] == "refused" and out["under"] == "ok"
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
