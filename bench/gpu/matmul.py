"""A sustained bf16 8192x8192 matrix product: prints TFLOP/s.

Usage: matmul.py SECONDS [--at EPOCH] [--every SECONDS]
--at starts measuring at that wall-clock time (so jobs started apart
measure the same window); --every prints a rate line that often.
"""
import argparse
import time

import torch


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("seconds", type=float)
    p.add_argument("--at", type=float, default=0.0)
    p.add_argument("--every", type=float, default=0.0)
    args = p.parse_args()
    n = 8192
    flop = 2.0 * n ** 3
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    for _ in range(20):
        a @ b
    torch.cuda.synchronize()
    if args.at > time.time():
        time.sleep(args.at - time.time())
    start = last = time.time()
    count = last_count = 0
    while True:
        for _ in range(10):
            a @ b
        torch.cuda.synchronize()
        count += 10
        now = time.time()
        if args.every and now - last >= args.every:
            rate = (count - last_count) * flop / (now - last) / 1e12
            print(f"t {now - start:.1f} tflops {rate:.2f}", flush=True)
            last, last_count = now, count
        if now - start >= args.seconds:
            break
    print(f"tflops {count * flop / (now - start) / 1e12:.3f}", flush=True)


if __name__ == "__main__":
    main()
