// GBNF syntax tree -> byte-level Grammar (see grammar.h), with the checks
// that make the matcher's expansion terminate (no left recursion).
#include <map>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_format.h"
#include "text/grammar/gbnf_ast.h"
#include "text/grammar/grammar_costs.h"
#include "text/grammar/grammar_parser.h"

namespace tandem::grammar {
namespace {

using Sequence = std::vector<Element>;

class Lowering {
 public:
  absl::StatusOr<Grammar> run(const std::vector<GbnfRule>& rules, std::string_view root) {
    for (const GbnfRule& rule : rules) {
      if (ids_.contains(rule.name)) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "grammar rule '%s' is defined twice (again at line %d, column %d)", rule.name,
            rule.line, rule.column));
      }
      ids_[rule.name] = newRule(rule.name);
    }
    auto it = ids_.find(std::string(root));
    if (it == ids_.end()) {
      return absl::InvalidArgumentError(absl::StrFormat("the grammar has no rule named '%s'", root));
    }
    g_.root = it->second;
    for (const GbnfRule& rule : rules) {
      std::vector<Sequence> alts;
      if (rule.body.kind == GbnfNode::Kind::kAlternatives) {
        for (const GbnfNode& child : rule.body.children) {
          alts.emplace_back();
          lower(child, rule.name, alts.back());
        }
      } else {
        alts.emplace_back();
        lower(rule.body, rule.name, alts.back());
      }
      if (!status_.ok()) return status_;
      define(ids_[rule.name], alts);
    }
    if (!status_.ok()) return status_;
    if (absl::Status s = checkLeftRecursion(); !s.ok()) return s;
    return std::move(g_);
  }

 private:
  uint32_t newRule(std::string name) {
    if (g_.rules.size() == static_cast<size_t>(kMaxGrammarRules)) {
      tooLarge(absl::StrFormat("more than %d rules once groups and repetitions are expanded",
                               kMaxGrammarRules));
      return 0;  // a valid id; status_ ends the lowering.
    }
    g_.rules.push_back({std::move(name), {}});
    return static_cast<uint32_t>(g_.rules.size() - 1);
  }

  void tooLarge(const std::string& what) {
    if (status_.ok()) status_ = absl::InvalidArgumentError("the grammar is too large: " + what);
  }

  // counts `n` more elements written into sequences (copies included, so
  // it bounds the lowering's memory and work, not only the result's size);
  // false once over kMaxGrammarElements.
  bool charge(size_t n) {
    emitted_ += n;
    if (emitted_ > static_cast<size_t>(kMaxGrammarElements)) {
      tooLarge(absl::StrFormat("more than %d elements once repetitions are expanded",
                               kMaxGrammarElements));
    }
    return status_.ok();
  }

  uint32_t helper(const std::string& owner) {
    return newRule(absl::StrFormat("%s_%d", owner, ++helpers_));
  }

  void define(uint32_t rule, const std::vector<Sequence>& alts) {
    if (!status_.ok()) return;
    if (alts.size() > static_cast<size_t>(kMaxRuleAlternatives)) {
      tooLarge(absl::StrFormat("rule '%s' has %d alternatives; at most %d are allowed",
                               g_.rules[rule].name, alts.size(), kMaxRuleAlternatives));
      return;
    }
    if (!charge(alts.size())) return;  // the ends
    for (const Sequence& seq : alts) {
      g_.rules[rule].alternatives.push_back(static_cast<uint32_t>(g_.elements.size()));
      g_.elements.insert(g_.elements.end(), seq.begin(), seq.end());
      g_.elements.push_back({Element::Kind::kEnd, 0});
    }
  }

  Element bytes(const ByteSet& set) {
    auto [it, added] = byte_set_ids_.try_emplace(set.words, g_.byte_sets.size());
    if (added) g_.byte_sets.push_back(set);
    return {Element::Kind::kBytes, static_cast<uint32_t>(it->second)};
  }

  // appends what matches `node` to `out`; may define helper rules.
  void lower(const GbnfNode& node, const std::string& owner, Sequence& out) {
    if (!status_.ok()) return;
    switch (node.kind) {
      case GbnfNode::Kind::kSequence:
        for (const GbnfNode& child : node.children) lower(child, owner, out);
        return;
      case GbnfNode::Kind::kAlternatives: {
        std::vector<Sequence> alts;
        for (const GbnfNode& child : node.children) {
          alts.emplace_back();
          lower(child, owner, alts.back());
        }
        const uint32_t rule = helper(owner);
        define(rule, alts);
        if (!charge(1)) return;
        out.push_back({Element::Kind::kRule, rule});
        return;
      }
      case GbnfNode::Kind::kLiteral:
        if (!charge(node.bytes.size())) return;
        for (char c : node.bytes) {
          ByteSet set;
          set.add(static_cast<uint8_t>(c));
          out.push_back(bytes(set));
        }
        return;
      case GbnfNode::Kind::kClass:
        lowerClass(node, owner, out);
        return;
      case GbnfNode::Kind::kRef: {
        auto it = ids_.find(node.name);
        if (it == ids_.end()) {
          status_ = absl::InvalidArgumentError(absl::StrFormat(
              "grammar rule '%s' (used at line %d, column %d) is not defined", node.name,
              node.line, node.column));
          return;
        }
        if (!charge(1)) return;
        out.push_back({Element::Kind::kRule, it->second});
        return;
      }
      case GbnfNode::Kind::kRepeat:
        lowerRepeat(node, owner, out);
        return;
    }
  }

  void lowerClass(const GbnfNode& node, const std::string& owner, Sequence& out) {
    std::vector<CodePointRange> ranges = normalizeRanges(node.ranges);
    if (node.negated) ranges = complementRanges(ranges);
    if (!charge(1)) return;
    auto cached = class_rules_.find(ranges);
    if (cached != class_rules_.end()) {
      out.push_back(cached->second);
      return;
    }
    const std::vector<Utf8Sequence> seqs = utf8Sequences(ranges);
    ByteSet single;
    bool has_single = false;
    std::vector<Sequence> multi;
    for (const Utf8Sequence& s : seqs) {
      if (s.size() == 1) {
        single.addRange(s[0].first, s[0].second);
        has_single = true;
        continue;
      }
      if (!charge(s.size())) return;
      Sequence seq;
      for (const ByteRange& r : s) {
        ByteSet set;
        set.addRange(r.first, r.second);
        seq.push_back(bytes(set));
      }
      multi.push_back(std::move(seq));
    }
    Element element;
    if (multi.empty()) {
      // an empty class ([^\x00-\U0010FFFF]) matches nothing: an empty byte set.
      element = bytes(single);
    } else {
      std::vector<Sequence> alts;
      if (has_single) alts.push_back({bytes(single)});
      for (Sequence& s : multi) alts.push_back(std::move(s));
      const uint32_t rule = helper(owner);
      define(rule, alts);
      element = {Element::Kind::kRule, rule};
    }
    class_rules_.emplace(std::move(ranges), element);
    out.push_back(element);
  }

  void lowerRepeat(const GbnfNode& node, const std::string& owner, Sequence& out) {
    Sequence unit;
    lower(node.children[0], owner, unit);
    if (!status_.ok()) return;
    // the copies below, charged before any is made (min + 1 for a star,
    // max for a bounded repetition; each copy with one reference).
    const size_t copies = static_cast<size_t>(node.max < 0 ? node.min + 1 : node.max);
    if (!charge(copies * (unit.size() + 1))) return;
    for (int i = 0; i < node.min; ++i) out.insert(out.end(), unit.begin(), unit.end());
    if (node.max < 0) {
      // star ::= unit star | ε  (right recursion: the matcher's stack does
      // not grow, the reference being last).
      const uint32_t star = helper(owner);
      Sequence again = unit;
      again.push_back({Element::Kind::kRule, star});
      define(star, {again, {}});
      out.push_back({Element::Kind::kRule, star});
      return;
    }
    // up to k more: opt_k ::= unit opt_{k-1} | ε, opt_1 ::= unit | ε.
    int32_t inner = -1;
    for (int k = 1; k <= node.max - node.min; ++k) {
      const uint32_t opt = helper(owner);
      Sequence seq = unit;
      if (inner >= 0) seq.push_back({Element::Kind::kRule, static_cast<uint32_t>(inner)});
      define(opt, {seq, {}});
      if (!status_.ok()) return;
      inner = static_cast<int32_t>(opt);
    }
    if (inner >= 0) out.push_back({Element::Kind::kRule, static_cast<uint32_t>(inner)});
  }

  // a rule that can reach itself before consuming a byte would make the
  // matcher's expansion loop forever: refused.
  absl::Status checkLeftRecursion() {
    const size_t n = g_.rules.size();
    // a rule is nullable when its least count of byte runs is 0 (settled
    // in one pass: a fixpoint over rules in text order took a pass per link
    // of a chain of rules defined bottom-up, quadratic in their number).
    const std::vector<uint32_t> runs = leastRuleCosts(g_, [](uint32_t) { return 1u; });
    std::vector<bool> nullable(n, false);
    for (size_t r = 0; r < n; ++r) nullable[r] = runs[r] == 0;
    // left corners: the rules an alternative may start with.
    std::vector<std::vector<uint32_t>> corners(n);
    for (size_t r = 0; r < n; ++r) {
      for (uint32_t start : g_.rules[r].alternatives) {
        prefixNullable(start, nullable, &corners[r]);
      }
    }
    // iterative depth-first search for a cycle (helper chains can be long).
    std::vector<uint8_t> mark(n, 0);  // 0 new, 1 on the path, 2 done
    std::vector<std::pair<uint32_t, size_t>> path;
    for (uint32_t start = 0; start < n; ++start) {
      if (mark[start] != 0) continue;
      path.push_back({start, 0});
      mark[start] = 1;
      while (!path.empty()) {
        auto& [r, i] = path.back();
        if (i == corners[r].size()) {
          mark[r] = 2;
          path.pop_back();
          continue;
        }
        const uint32_t next = corners[r][i++];
        if (mark[next] == 1) {
          return absl::InvalidArgumentError(absl::StrFormat(
              "grammar rule '%s' is left-recursive (it can reach itself before matching any "
              "character); rewrite it with repetition",
              g_.rules[next].name));
        }
        if (mark[next] == 0) {
          mark[next] = 1;
          path.push_back({next, 0});
        }
      }
    }
    return absl::OkStatus();
  }

  // walks the alternative at `start` while its elements can match nothing,
  // collecting the rules met into `corners`; true when all of it can.
  bool prefixNullable(uint32_t start, const std::vector<bool>& nullable,
                      std::vector<uint32_t>* corners) const {
    for (uint32_t p = start;; ++p) {
      const Element& e = g_.elements[p];
      if (e.kind == Element::Kind::kEnd) return true;
      if (e.kind == Element::Kind::kBytes) return false;
      if (corners != nullptr) corners->push_back(e.arg);
      if (!nullable[e.arg]) return false;
    }
  }

  Grammar g_;
  absl::Status status_;
  std::map<std::string, uint32_t> ids_;
  absl::flat_hash_map<std::array<uint64_t, 4>, size_t> byte_set_ids_;
  std::map<std::vector<CodePointRange>, Element> class_rules_;
  int helpers_ = 0;
  // elements written into sequences so far (see charge()).
  size_t emitted_ = 0;
};

}  // namespace

absl::StatusOr<Grammar> lowerGbnf(const std::vector<GbnfRule>& rules, std::string_view root) {
  return Lowering().run(rules, root);
}

}  // namespace tandem::grammar
