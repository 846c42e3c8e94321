# summary.md of one GPU check run (bench/gpu/run_on_device.sh): the tables of tandem_gpu_check's
# reports (parity, oracle, bench, e2e) beside the peers measured in the same run (the vendor BLAS in
# the same binary, PyTorch's torch_peer.py), as ratios. Usage: summarize.py RESULTS_DIR > summary.md
import glob, json, os, sys

out = sys.argv[1]


def load(name):
    try:
        with open(os.path.join(out, name)) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def pct(x):
    return "-" if x is None else f"{x:.0%}"


def num(x, fmt="{:.1f}"):
    return "-" if x is None else fmt.format(x)


info = load("info.json") or {}
dev = info.get("device", {})
print(f"device: {dev.get('name')} ({dev.get('vendor')}, {dev.get('multiprocessors')} multiprocessors, "
      f"{dev.get('memory_bytes', 0) / 2**30:.0f} GiB); gemm path: {info.get('gemm_path')}\n")

for name in sorted(glob.glob(os.path.join(out, "parity*.json"))):
    p = load(os.path.basename(name))
    if p:
        print(f"- {os.path.basename(name)}: {p['total'] - p['failed']}/{p['total']} cases within tolerance")
for name in sorted(glob.glob(os.path.join(out, "oracle*.json"))):
    o = load(os.path.basename(name))
    if o:
        rule = f"top-2 gap rule {o.get('tie_gap')}" if o.get("tie_gap") else "token-exact"
        print(f"- {os.path.basename(name)}: {o['exact']}/{o['total']} prompts pass ({rule}, "
              f"graphs {'on' if o.get('graphs') else 'off'})")
print()

torch_micro = (load("torch.json") or {}).get("micro", {})
bench = (load("bench.json") or {}).get("bench")
if bench:
    copy = bench["copy"]["value"]
    print(f"copy bandwidth: {copy:.0f} GB/s (read + written); dense F16/BF16 peak "
          f"{bench['peak_tflops_f16_bf16']} TFLOP/s ({bench['peak_source']})\n")
    rows = bench.get("gemv", [])
    if rows:
        print("| gemv (decode) | tandem µs | GB/s | of copy | vendor BLAS µs | torch µs | vs BLAS | vs torch |")
        print("| --- | --- | --- | --- | --- | --- | --- | --- |")
        for e in rows:
            t = torch_micro.get(e["name"], {}).get("us")
            peer = e.get("peer", {}).get("median_s")
            ours = e["median_s"] * 1e6
            print(f"| {e['name']} | {ours:.1f} | {e['value']:.0f} | {pct(e.get('fraction_of_copy_bandwidth'))} | "
                  f"{num(peer and peer * 1e6)} | {num(t)} | {num(peer and peer * 1e6 / ours, '{:.2f}x')} | "
                  f"{num(t and t / ours, '{:.2f}x')} |")
        print()
    rows = bench.get("gemv_quant", [])
    if rows:
        print("| gemv, quantized weights | tandem µs | GB/s (quantized bytes) | of copy |")
        print("| --- | --- | --- | --- |")
        for e in rows:
            print(f"| {e['name']} | {e['median_s'] * 1e6:.1f} | {e['value']:.0f} | "
                  f"{pct(e.get('fraction_of_copy_bandwidth'))} |")
        print()
    rows = bench.get("gemm", [])
    if rows:
        print("| gemm (prefill) | tandem TFLOP/s | of peak | vendor BLAS alone | torch | vs torch | note |")
        print("| --- | --- | --- | --- | --- | --- | --- |")
        for e in rows:
            t = torch_micro.get(e["name"], {}).get("tflops")
            peer = e.get("peer", {}).get("tflops")
            note = ""
            if "fraction_of_f16_blas" in e:
                note = f"{e['fraction_of_f16_blas']:.0%} of the F16 BLAS ({e['f16_blas_tflops']:.0f})"
            print(f"| {e['name']} | {e['tflops']:.1f} | {pct(e.get('fraction_of_peak'))} | {num(peer)} | "
                  f"{num(t)} | {num(t and e['tflops'] / t, '{:.2f}x')} | {note} |")
        print()
    rows = bench.get("attention", [])
    if rows:
        print("| decode attention (paged) | tandem µs | GB/s | of copy | contiguous-KV tandem µs | "
              "torch SDPA µs | vs torch |")
        print("| --- | --- | --- | --- | --- | --- | --- |")
        for e in rows:
            t = torch_micro.get(e["name"], {}).get("us")
            ours = e["median_s"] * 1e6
            print(f"| {e['name']} | {ours:.1f} | {e['value']:.0f} | {pct(e.get('fraction_of_copy_bandwidth'))} | "
                  f"{e.get('contiguous_kv_median_s', 0) * 1e6:.1f} | {num(t)} | {num(t and t / ours, '{:.2f}x')} |")
        print()
    rows = bench.get("attention_prefill", [])
    if rows:
        print("| prefill attention (causal) | tandem TFLOP/s | torch SDPA TFLOP/s | vs torch |")
        print("| --- | --- | --- | --- |")
        for e in rows:
            t = torch_micro.get(e["name"], {}).get("tflops")
            print(f"| {e['name']} | {e['value']:.1f} | {num(t)} | {num(t and e['value'] / t, '{:.2f}x')} |")
        print()

    st = bench.get("staging")
    if st:
        print(f"KV staging, a 4k-token prompt's {st['kv_bytes'] / 1e6:.0f} MB in {st['blocks']} blocks: gather to "
              f"pinned {st['gather_to_pinned_GBps']:.1f} GB/s ({st['gather_vs_copy']:.0%} of a plain copy's "
              f"{st['copy_device_to_pinned_GBps']:.1f}), scatter from pinned {st['scatter_from_pinned_GBps']:.1f} "
              f"GB/s ({st['scatter_vs_copy']:.0%} of {st['copy_pinned_to_device_GBps']:.1f})\n")

e2e_files = sorted(glob.glob(os.path.join(out, "e2e_*.json")))
if e2e_files:
    print("| model (e2e) | decode x1 tok/s (graphs / eager) | of roofline | x16 | x64 | x64 / x1 | "
          "prefill tok/s | of compute roofline |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for name in e2e_files:
        e = (load(os.path.basename(name)) or {}).get("e2e")
        if not e:
            continue
        d = e.get("decode", {})
        key = lambda b, suffix="": next((v for k, v in d.items() if k.endswith(f"x{b}{suffix}")), {})
        one, one_eager, x16, x64 = key(1), key(1, "_eager"), key(16), key(64)
        pre = "; ".join(f"{k}: {v['tok_s']:.0f}" for k, v in e.get("prefill", {}).items())
        frac = "; ".join(f"{k}: {v['fraction_of_compute_roofline']:.0%}"
                         for k, v in e.get("prefill", {}).items())
        label = os.path.basename(name)[4:-5]
        print(f"| {label} | {num(one.get('tok_s'))} / {num(one_eager.get('tok_s'))} | "
              f"{pct(one.get('fraction_of_bandwidth_roofline'))} | {num(x16.get('tok_s'))} | "
              f"{num(x64.get('tok_s'))} | {num(x64.get('aggregate_vs_batch1'), '{:.1f}x')} | {pre} | {frac} |")
    print()
    print("(roofline: the run's copy bandwidth / weight bytes a step; compute: the vendor BLAS's F16 "
          "throughput measured in the same run)")

pd, agg = load("pd_pd.json"), load("pd_agg.json")
if pd and agg:
    a, b = pd["ttft_ms"]["p50"], agg["ttft_ms"]["p50"]
    print(f"\nP/D on one GPU (tandem serve, 4k-token prompts, one at a time): TTFT p50 remote prefill "
          f"{a:.0f} ms, aggregated {b:.0f} ms: {a / b:.2f}x")
