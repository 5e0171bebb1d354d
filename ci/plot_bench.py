#!/usr/bin/env python3
"""Plots a `peerpool bench` report: bandwidth against size for each path and pair, grant and
revoke latency against live bytes, and a pair heatmap of kernel read bandwidth at the largest
size. Usage: ci/plot_bench.py bench.json OUT_DIR   (needs matplotlib)."""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(path, out):
    report = json.load(open(path))
    sizes = report["sizes"]
    pairs = report["pairs"]
    # Curves for the pairs measured at every size (`--curve-pairs` leaves the rest at the
    # largest size, for the heatmap), four plots a row.
    curved = [p for p in pairs if len(p.get("sizes", sizes)) > 1] or pairs[:1]
    cols = min(4, len(curved))
    rows = (len(curved) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(6 * cols, 4.5 * rows), squeeze=False)
    for ax in axes.flat[len(curved):]:
        ax.axis("off")
    for ax, pair in zip(axes.flat, curved):
        for curve in pair["curves"]:
            gbps = [g if g is not None else float("nan") for g in curve["gbps"]]
            ax.plot(pair.get("sizes", sizes), gbps, marker="o", label=curve["path"])
        if report.get("nvlink_line_rate_gbps"):
            ax.axhline(report["nvlink_line_rate_gbps"], color="grey", linestyle="--", label="NVLink line rate (one way)")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("bytes per transfer")
        ax.set_ylabel("GB/s")
        ax.set_title(f"gpu{pair['owner']} memory, gpu{pair['accessor']} accessing")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(report["driver"])
    fig.tight_layout()
    fig.savefig(f"{out}/bandwidth.png", dpi=110)

    fig, ax = plt.subplots(figsize=(6, 4))
    live = [p["live_gib"] for p in report["grant_vs_live"]]
    ax.plot(live, [p["grant_us"] for p in report["grant_vs_live"]], marker="o", label="grant")
    ax.plot(live, [p["revoke_us"] for p in report["grant_vs_live"]], marker="o", label="revoke")
    ax.set_xlabel("live GiB in the pool")
    ax.set_ylabel("microseconds (median)")
    ax.set_yscale("log")
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(f"{out}/grant_vs_live.png", dpi=110)

    skipped = report.get("skipped", [])
    n = 1 + max(max(p["owner"], p["accessor"]) for p in pairs + skipped)
    grid = [[float("nan")] * n for _ in range(n)]
    for p in pairs:
        read = next(c for c in p["curves"] if c["path"].startswith("kernel read"))
        # null where nothing was timed.
        grid[p["accessor"]][p["owner"]] = read["gbps"][-1] if read["gbps"][-1] is not None else float("nan")
    cell = 1.2 if n <= 8 else 0.7
    fig, ax = plt.subplots(figsize=(cell * n + 2, cell * n + 1))
    image = ax.imshow(grid, cmap="viridis")
    ax.set_xticks(range(n))
    ax.set_yticks(range(n))
    font = 9 if n <= 8 else 6
    for a in range(n):
        for o in range(n):
            if grid[a][o] == grid[a][o]:
                ax.text(o, a, f"{grid[a][o]:.0f}", ha="center", va="center", color="white", fontsize=font)
    # Pairs left out (no peer access both ways) are marked; the diagonal stays blank.
    for p in skipped:
        ax.text(p["owner"], p["accessor"], "-", ha="center", va="center", color="grey", fontsize=font)
    ax.set_xlabel("owner (pool's GPU)")
    ax.set_ylabel("accessor (kernel's GPU)")
    ax.set_title(f"kernel read GB/s at {sizes[-1] >> 20} MiB")
    fig.colorbar(image)
    fig.tight_layout()
    fig.savefig(f"{out}/pair_heatmap.png", dpi=110)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
