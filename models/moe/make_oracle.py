# one MoE oracle: the prompts of models/stories260K/greedy_oracle.json
# completed greedily by llama.cpp (GREEDY: the greedy_ids program of
# models/stories260K/llamacpp, F32 KV cache) on a synthetic model.
#   python3 make_oracle.py GREEDY MODEL.gguf NAME SHAPE DTYPE TOKENS OUT.json
import json, subprocess, sys
greedy, model, name, shape, dtype, tokens, out = sys.argv[1:8]
src = sys.argv[0].rsplit("/", 2)[0] + "/stories260K/greedy_oracle.json"
cases = json.load(open(src))["cases"]
prompts = "".join(" ".join(map(str, c["prompt_ids"])) + "\n" for c in cases)
lines = subprocess.run([greedy, model, tokens], input=prompts.encode(), capture_output=True,
                       check=True).stdout.decode("utf-8", "replace").rstrip("\n").split("\n")
result = {"model": name, "synth_shape": shape, "synth_dtype": dtype, "synth_seed": 0,
          "vocab_from": "models/stories260K/gguf/stories260K.gguf",
          "sampling": "greedy (temperature 0)", "max_tokens": int(tokens), "kv_cache": "f32",
          "cases": []}
for c, line in zip(cases, lines, strict=True):
    fields = line.split("\t")
    text = "\t".join(fields[1:-1]).replace("\\\\", "\0").replace("\\n", "\n").replace("\0", "\\")
    result["cases"].append({"prompt": c["prompt"], "prompt_ids": c["prompt_ids"],
                            "completion_ids": [int(t) for t in fields[0].split()],
                            "completion_text": text,
                            "top2_gaps": [float(g) for g in fields[-1].split()]})
with open(out, "w") as f:
    json.dump(result, f, indent=1, ensure_ascii=False)
    f.write("\n")
