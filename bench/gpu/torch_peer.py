# The vendor peers on the GPU at hand, for the shapes `tandem_gpu_check bench` measures (bench/gpu/
# kernel_bench.h): torch.matmul (cuBLAS / hipBLAS) for the decode GEMVs and prefill GEMMs,
# scaled_dot_product_attention (FlashAttention on contiguous KV: the peer's best case) for decode and
# causal prefill attention. Each time is the median replay of a captured CUDA graph of `iters` calls
# (Python's launch cost does not count), as tandem_gpu_check times its own kernels. One JSON object on
# stdout. Usage: python3 bench/gpu/torch_peer.py [--small]
import json, sys, time
import torch
import torch.nn.functional as F

dev = "cuda"
small = "--small" in sys.argv


def timed(fn, iters=20, repeats=7):
    fn()
    torch.cuda.synchronize()
    run = None
    try:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(2):
                fn()
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for _ in range(iters):
                fn()
        run = graph.replay
    except Exception:
        def run():
            for _ in range(iters):
                fn()
    run()
    torch.cuda.synchronize()
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        torch.cuda.synchronize()
        samples.append((time.perf_counter() - start) / iters)
    samples.sort()
    return samples[len(samples) // 2]


decode_shapes = {"8b_q_o": (4096, 4096), "8b_k_v": (1024, 4096), "8b_gate_up": (14336, 4096),
                 "8b_down": (4096, 14336), "8b_lm_head": (128256, 4096), "1b_q_o": (2048, 2048),
                 "1b_k_v": (512, 2048), "1b_gate_up": (8192, 2048), "1b_down": (2048, 8192),
                 "1b_lm_head": (128256, 2048)}
prefill_shapes = ("8b_q_o", "8b_k_v", "8b_gate_up", "8b_down")
if small:
    decode_shapes = {"small_a": (64, 256)}
    prefill_shapes = ("small_a",)

out = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "micro": {}}
res = out["micro"]
for dt, dn in ((torch.float16, "f16"), (torch.bfloat16, "bf16")):
    for label, (n, k) in decode_shapes.items():
        # weights rotated so each call reads them from memory, not the L2 cache
        copies = max(1, min(32, (512 << 20) // (n * k * 2)))
        ws = [torch.randn(n, k, device=dev, dtype=dt) for _ in range(copies)]
        rows = (1, 2, 4, 8) + ((128, 512, 2048) if label in prefill_shapes else ())
        for m in rows:
            x = torch.randn(m, k, device=dev, dtype=dt)
            state = {"i": 0}

            def call():
                state["i"] = (state["i"] + 1) % copies
                return x @ ws[state["i"]].t()
            # a graph replays the captured sequence of weights, so the rotation holds in it too
            iters = max(copies, 10 if m > 8 else 40)
            sec = timed(call, iters=iters)
            kind = "gemv" if m <= 8 else "gemm"
            res[f"{kind}_{dn}_{m}x{n}x{k}_{label}"] = {
                "us": sec * 1e6, "weights_GBps": n * k * 2 / sec / 1e9, "tflops": 2 * m * n * k / sec / 1e12}
        del ws
        torch.cuda.empty_cache()
    heads, kv_heads, d = (4, 2, 32) if small else (32, 8, 128)
    for seqs in ((2,) if small else (1, 8, 32, 64)):
        for ctx in ((64, 300) if small else (1024, 4096, 32768)):
            q = torch.randn(seqs, heads, 1, d, device=dev, dtype=dt)
            kk = torch.randn(seqs, kv_heads, ctx, d, device=dev, dtype=dt)
            vv = torch.randn_like(kk)
            sec = timed(lambda: F.scaled_dot_product_attention(q, kk, vv, enable_gqa=True))
            res[f"attention_decode_{dn}_{seqs}seqs_ctx{ctx}"] = {
                "us": sec * 1e6, "kv_GBps": kk.numel() * kk.element_size() * 2 / sec / 1e9}
            del q, kk, vv
            torch.cuda.empty_cache()
    for tokens in ((48,) if small else (1024, 4096, 16384)):
        q = torch.randn(1, heads, tokens, d, device=dev, dtype=dt)
        kk = torch.randn(1, kv_heads, tokens, d, device=dev, dtype=dt)
        vv = torch.randn_like(kk)
        sec = timed(lambda: F.scaled_dot_product_attention(q, kk, vv, is_causal=True, enable_gqa=True),
                    iters=5, repeats=5)
        res[f"attention_prefill_{dn}_{tokens}"] = {
            "us": sec * 1e6, "tflops": 4 * heads * d * tokens * tokens / 2 / sec / 1e12}
print(json.dumps(out, indent=1))
