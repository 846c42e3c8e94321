// `tandem model inspect|tokenize|detokenize|render-chat|synth`.
#include <algorithm>
#include <climits>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cli/command.h"
#include "common/mapped_file.h"
#include "common/status.h"
#include "formats/gguf_file.h"
#include "generation/request_limits.h"
#include "nlohmann/json.hpp"
#include "server/model/synth.h"
#include "server/model/weights.h"
#include "text/chat/chat_template.h"
#include "text/tokenizer/tokenizer.h"

namespace tandem::cli {
namespace {

using nlohmann::json;

bool isGgufPath(const std::string& path) {
  return std::filesystem::path(path).extension() == ".gguf";
}

void printRaw(const std::string& s) {
  std::fwrite(s.data(), 1, s.size(), stdout);
  std::fflush(stdout);
}

// ordered: chat templates print tool schemas in the order the user wrote them.
absl::StatusOr<nlohmann::ordered_json> readJsonFile(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, readFile(path));
  auto value = nlohmann::ordered_json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded()) return absl::InvalidArgumentError(absl::StrCat(path, ": invalid JSON"));
  return value;
}

absl::Status runInspect(const std::string& path) {
  ASSIGN_OR_RETURN(auto weights, model::ModelWeights::load(path));
  std::string out = model::describeModel(*weights);
  auto tok = tokenizer::Tokenizer::load(path);
  if (tok.ok()) {
    absl::StrAppend(&out, "tokenizer: ", (*tok)->kind(), ", vocab ", (*tok)->vocabSize());
    if (auto bos = (*tok)->bosId()) absl::StrAppend(&out, ", bos ", *bos);
    if (auto eos = (*tok)->eosId()) absl::StrAppend(&out, ", eos ", *eos);
    absl::StrAppend(&out, "\n");
  } else {
    absl::StrAppend(&out, "tokenizer: unavailable (", tok.status().message(), ")\n");
  }
  printRaw(out);
  return absl::OkStatus();
}

struct TokenizeArgs {
  std::string model;
  std::string text;
  std::string file;
  bool no_special = false;
};

absl::Status runTokenize(const TokenizeArgs& args) {
  std::string text = args.text;
  if (!args.file.empty()) {
    ASSIGN_OR_RETURN(text, readFile(args.file));
  }
  ASSIGN_OR_RETURN(auto tok, tokenizer::Tokenizer::load(args.model));
  std::vector<tokenizer::TokenId> ids = tok->encode(text, !args.no_special);
  printRaw(json(ids).dump() + "\n");
  return absl::OkStatus();
}

absl::Status runDetokenize(const std::string& model, const std::vector<int64_t>& ids,
                           bool skip_special) {
  ASSIGN_OR_RETURN(auto tok, tokenizer::Tokenizer::load(model));
  std::vector<tokenizer::TokenId> toks;
  for (int64_t id : ids) {
    // beyond int32: outside any vocabulary, reported as the one rule words it.
    const auto narrowed = static_cast<int32_t>(std::clamp<int64_t>(id, INT32_MIN, INT32_MAX));
    RETURN_IF_ERROR(generation::checkTokenIds({.vocab_size = tok->vocabSize()},
                                              std::span<const int32_t>(&narrowed, 1), "detokenize"));
    toks.push_back(static_cast<tokenizer::TokenId>(id));
  }
  printRaw(tok->decode(toks, skip_special));
  return absl::OkStatus();
}

// the chat template of an HF dir (tokenizer_config.json) or of a GGUF
// (tokenizer.chat_template, with bos/eos strings from its vocabulary).
absl::StatusOr<chat::ChatTemplatePtr> loadTemplate(const std::string& path) {
  if (!isGgufPath(path)) return chat::ChatTemplate::fromHfDir(path);
  ASSIGN_OR_RETURN(auto gguf, model::GgufFile::open(path));
  auto source = gguf->getString("tokenizer.chat_template");
  if (!source.ok()) {
    return absl::NotFoundError(absl::StrCat(path, ": no tokenizer.chat_template"));
  }
  ASSIGN_OR_RETURN(auto tmpl, chat::ChatTemplate::parse(std::string(*source)));
  ASSIGN_OR_RETURN(auto tok, tokenizer::Tokenizer::fromGguf(*gguf));
  std::string bos = tok->bosId() ? tok->decode({*tok->bosId()}, false) : "";
  std::string eos = tok->eosId() ? tok->decode({*tok->eosId()}, false) : "";
  tmpl->setSpecialTokens(bos, eos);
  return tmpl;
}

struct RenderArgs {
  std::string model;
  std::string messages;
  std::string tools;
  bool no_generation_prompt = false;
  std::vector<std::string> vars;
};

absl::Status runRenderChat(const RenderArgs& args) {
  ASSIGN_OR_RETURN(nlohmann::ordered_json messages, readJsonFile(args.messages));
  if (messages.is_object() && messages.contains("messages")) messages = messages["messages"];
  if (!messages.is_array()) {
    return absl::InvalidArgumentError(absl::StrCat(args.messages, ": expected a JSON array of messages"));
  }
  nlohmann::ordered_json tools = nullptr;
  if (!args.tools.empty()) {
    ASSIGN_OR_RETURN(tools, readJsonFile(args.tools));
  }
  nlohmann::ordered_json extra = nlohmann::ordered_json::object();
  for (const std::string& kv : args.vars) {
    size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) {
      return absl::InvalidArgumentError(absl::StrCat("--var expects k=v, got '", kv, "'"));
    }
    std::string value = kv.substr(eq + 1);
    auto parsed = nlohmann::ordered_json::parse(value, nullptr, false);
    // a value that is not JSON is taken as a plain string (--var name=alice)
    extra[kv.substr(0, eq)] = parsed.is_discarded() ? nlohmann::ordered_json(value) : parsed;
  }
  ASSIGN_OR_RETURN(auto tmpl, loadTemplate(args.model));
  ASSIGN_OR_RETURN(std::string prompt,
                   tmpl->render(messages, tools, !args.no_generation_prompt, extra));
  printRaw(prompt);
  return absl::OkStatus();
}

struct SynthArgs {
  std::string out;
  std::string format = "hf";
  std::string shape;
  std::string dtype = "f32";
  std::string vocab_from;
  uint64_t seed = 0;
};

absl::Status runSynth(const SynthArgs& args) {
  model::SynthOptions opts;
  opts.out = args.out;
  if (args.format == "hf") {
    opts.format = model::SynthOptions::Format::kHf;
  } else if (args.format == "gguf") {
    opts.format = model::SynthOptions::Format::kGguf;
  } else {
    return absl::InvalidArgumentError(absl::StrCat("--format must be hf or gguf, got '", args.format, "'"));
  }
  ASSIGN_OR_RETURN(opts.shape, model::parseShape(args.shape));
  if (args.dtype == "f32") {
    opts.dtype = DType::kF32;
  } else if (args.dtype == "f16") {
    opts.dtype = DType::kF16;
  } else if (args.dtype == "bf16") {
    opts.dtype = DType::kBF16;
  } else if (args.dtype == "q8_0") {
    opts.dtype = DType::kQ8_0;
  } else if (args.dtype == "q4_0") {
    opts.dtype = DType::kQ4_0;
  } else if (args.dtype == "q4_k_m") {
    opts.q4_k_m = true;
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        "--dtype must be f32, f16, bf16, q8_0, q4_0 or q4_k_m, got '", args.dtype, "'"));
  }
  opts.vocab_from = args.vocab_from;
  opts.seed = args.seed;
  RETURN_IF_ERROR(model::writeSynthModel(opts));
  std::fprintf(stderr, "wrote %s\n", args.out.c_str());
  return absl::OkStatus();
}

}  // namespace

void registerModelCommand(CLI::App& app) {
  CLI::App* model = app.add_subcommand("model", "inspect, tokenize, render chat prompts, synthesize models");
  model->require_subcommand(1);

  auto* inspect = model->add_subcommand("inspect", "print a model's architecture, shapes, dtypes and tokenizer");
  auto inspect_path = std::make_shared<std::string>();
  inspect->add_option("path", *inspect_path, "HF model directory or .gguf file")->required();
  setAction(inspect, [inspect_path] { return runInspect(*inspect_path); });

  auto* tokenize = model->add_subcommand("tokenize", "print the token ids of a text as a JSON array");
  auto targs = std::make_shared<TokenizeArgs>();
  tokenize->add_option("--model", targs->model, "HF dir, tokenizer dir or .gguf")->required();
  tokenize->add_flag("--no-special", targs->no_special, "add no special tokens (no BOS)");
  auto* text_opt = tokenize->add_option("--text", targs->text, "the text");
  auto* file_opt = tokenize->add_option("--file", targs->file, "read the text from a file");
  text_opt->excludes(file_opt);
  setAction(tokenize, [targs, text_opt, file_opt]() -> absl::Status {
    if (text_opt->count() == 0 && file_opt->count() == 0) {
      return absl::InvalidArgumentError("one of --text or --file is required");
    }
    return runTokenize(*targs);
  });

  auto* detok = model->add_subcommand("detokenize", "print the text of token ids");
  auto dmodel = std::make_shared<std::string>();
  auto dids = std::make_shared<std::vector<int64_t>>();
  auto dskip = std::make_shared<bool>(false);
  detok->add_option("--model", *dmodel, "HF dir, tokenizer dir or .gguf")->required();
  detok->add_flag("--skip-special", *dskip, "drop special tokens");
  detok->add_option("ids", *dids, "token ids")->required();
  setAction(detok, [dmodel, dids, dskip] { return runDetokenize(*dmodel, *dids, *dskip); });

  auto* render = model->add_subcommand("render-chat", "print the prompt a chat template renders");
  auto rargs = std::make_shared<RenderArgs>();
  render->add_option("--model", rargs->model, "HF dir, tokenizer dir or .gguf")->required();
  render->add_option("--messages", rargs->messages, "JSON file: array of {role, content}")->required();
  render->add_option("--tools", rargs->tools, "JSON file: array of tool definitions");
  render->add_flag("--no-generation-prompt", rargs->no_generation_prompt, "add_generation_prompt=false");
  render->add_option("--var", rargs->vars, "template variable k=v (v is JSON)");
  setAction(render, [rargs] { return runRenderChat(*rargs); });

  auto* synth = model->add_subcommand("synth", "write a deterministic random-weight Llama model");
  auto sargs = std::make_shared<SynthArgs>();
  synth->add_option("--out", sargs->out, "output directory (hf) or .gguf file")->required();
  synth->add_option("--format", sargs->format, "hf or gguf")->required();
  synth->add_option("--shape", sargs->shape,
                    "e.g. dim=768,layers=12,heads=12,kv_heads=12,ffn=2048,vocab=32000 "
                    "(also head_dim=, max_pos=, arch=llama|mistral|qwen2|qwen3|qwen3moe|mixtral, rope_scaling=llama3; a mixture of experts: experts=8,experts_used=2[,expert_ffn=N] with arch=qwen3moe|mixtral)")->required();
  synth->add_option("--dtype", sargs->dtype,
                    "f32, f16 or bf16; gguf also q8_0, q4_0 or q4_k_m (llama.cpp's mix of q4_k and q6_k)")->capture_default_str();
  synth->add_option("--vocab-from", sargs->vocab_from, "take the tokenizer of an HF dir (tokenizer.json) or a .gguf, converting between formats as needed");
  synth->add_option("--seed", sargs->seed, "random seed")->capture_default_str();
  setAction(synth, [sargs] { return runSynth(*sargs); });
}

}  // namespace tandem::cli
