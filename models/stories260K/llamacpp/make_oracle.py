# greedy_oracle_q8_0.json: the prompts of greedy_oracle.json completed greedily
# (48 tokens) by llama.cpp (./greedy_ids) on the given GGUF file.
import json, subprocess, sys
src, model, out = sys.argv[1:4]
cases = json.load(open(src))["cases"]
prompts = "".join(" ".join(map(str, c["prompt_ids"])) + "\n" for c in cases)
lines = subprocess.run(["./greedy_ids", model, "48"], input=prompts, capture_output=True,
                       text=True, check=True).stdout.splitlines()
def unescape(t):
    return t.replace("\\\\", "\0").replace("\\n", "\n").replace("\0", "\\")
result = {"model": "stories260K-q8_0", "sampling": "greedy (temperature 0)", "max_tokens": 48,
          "kv_cache": "f32", "cases": []}
for c, line in zip(cases, lines, strict=True):
    ids, text, gaps = line.split("\t")
    result["cases"].append({"prompt": c["prompt"], "prompt_ids": c["prompt_ids"],
                            "completion_ids": [int(t) for t in ids.split()],
                            "completion_text": unescape(text),
                            "top2_gaps": [float(g) for g in gaps.split()]})
with open(out, "w") as f:
    json.dump(result, f, indent=1, ensure_ascii=False)
    f.write("\n")
