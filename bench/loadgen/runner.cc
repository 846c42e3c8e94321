#include "bench/loadgen/runner.h"

#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <queue>
#include <unordered_map>

#include "absl/strings/str_join.h"
#include "bench/loadgen/progress.h"
#include "text/tokenizer/tokenizer.h"

namespace tandem::bench {

namespace {

double secondsSince(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// a request waiting for its send time.
struct Ready {
  double at_s;
  uint64_t seq;  // ties keep workload order
  BenchRequest req;
  bool operator>(const Ready& o) const { return at_s != o.at_s ? at_s > o.at_s : seq > o.seq; }
};

struct Completion {
  uint64_t index;
  StreamResult result;
};

struct Session {
  std::vector<ChatMessage> history;
  std::deque<BenchRequest> parked;  // later turns, waiting for this one
  bool broken = false;              // a turn failed: the rest are not sent
};

}  // namespace

StreamRequest shapeRequest(const BenchRequest& req, const std::vector<ChatMessage>& history,
                           const tokenizer::Tokenizer* tokenizer, const RunnerOptions& options) {
  StreamRequest out;
  out.api = options.api;
  out.model = options.model;
  out.max_tokens = req.max_tokens;
  out.ignore_eos = options.ignore_eos;
  out.temperature = options.temperature;
  std::string text = req.prompt_text;
  if (text.empty() && !req.prompt_ids.empty() && (options.api == Api::kChat || !history.empty()) &&
      tokenizer != nullptr) {
    text = tokenizer->decode(req.prompt_ids, true);
  }
  if (options.api == Api::kChat) {
    out.messages = history;
    out.messages.push_back({"user", text});
  } else if (!history.empty()) {
    std::vector<std::string> parts;
    for (const ChatMessage& m : history) parts.push_back(m.content);
    parts.push_back(text);
    out.prompt_text = absl::StrJoin(parts, "\n");
  } else if (!req.prompt_ids.empty()) {
    out.prompt_ids = req.prompt_ids;
  } else {
    out.prompt_text = text;
  }
  return out;
}

namespace {

// one benchmark run's dispatch state; run() is the loop: take finished
// requests, send what is due, sleep until the next send time or completion.
class BenchmarkRun {
 public:
  BenchmarkRun(Workload& workload, ArrivalProcess& arrivals, StreamClient& client,
               const tokenizer::Tokenizer* tokenizer, const RunnerOptions& options, const Slo& slo,
               ProgressReporter* progress)
      : workload_(workload), arrivals_(arrivals), client_(client), tokenizer_(tokenizer),
        options_(options), slo_(slo), progress_(progress) {}

  absl::StatusOr<RunResult> run();

 private:
  // pulls until the next request that needs a send time (later turns of a
  // session are parked on it instead).
  void pull();
  // InvalidArgument for options that cannot drive this workload.
  absl::Status validate() const;
  // records the requests that finished and queues their sessions' next turns.
  void takeCompletions();
  // true once the request or time budget is spent.
  bool budgetSpent(double now) const;
  bool slotFree() const {
    return options_.max_concurrency <= 0 || static_cast<int>(in_flight_.size()) < options_.max_concurrency;
  }
  // sends every request due by `now` while a concurrency slot is free.
  void sendDue(double now);
  void send(BenchRequest req);
  // the next send time, a completion, or 100 ms (progress redraws).
  void waitForWork(double now);

  Workload& workload_;
  ArrivalProcess& arrivals_;
  StreamClient& client_;
  const tokenizer::Tokenizer* tokenizer_;
  const RunnerOptions& options_;
  const Slo& slo_;
  ProgressReporter* progress_;

  RunResult run_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Completion> completions_;  // guarded by mu_

  std::priority_queue<Ready, std::vector<Ready>, std::greater<Ready>> ready_;
  std::unordered_map<int64_t, Session> sessions_;
  std::unordered_map<uint64_t, BenchRequest> in_flight_;
  std::optional<Ready> lookahead_;  // the next timed request from the workload
  bool exhausted_ = false;
  uint64_t seq_ = 0, dispatched_ = 0;
  bool closed_loop_ = false;
  bool stop_sending_ = false;
  ProgressState state_;
  Clock::time_point t0_;
};

void BenchmarkRun::pull() {
  while (!lookahead_ && !exhausted_) {
    std::optional<BenchRequest> req = workload_.next();
    if (!req) {
      exhausted_ = true;
      return;
    }
    if (req->session_id >= 0 && req->turn > 0) {
      sessions_[req->session_id].parked.push_back(std::move(*req));
      continue;
    }
    std::optional<double> at = arrivals_.next(*req);
    closed_loop_ = !at.has_value();
    lookahead_ = Ready{at.value_or(0.0), seq_++, std::move(*req)};
  }
}

absl::Status BenchmarkRun::validate() const {
  if (closed_loop_ && options_.max_concurrency <= 0) {
    return absl::InvalidArgumentError("closed-loop arrivals need --concurrency");
  }
  if (workload_.endless() && !options_.num_requests && !options_.duration_s) {
    return absl::InvalidArgumentError("a random workload is endless: give --num-requests or --duration");
  }
  return absl::OkStatus();
}

void BenchmarkRun::takeCompletions() {
  std::vector<Completion> done;
  {
    std::lock_guard<std::mutex> lock(mu_);
    done.swap(completions_);
  }
  for (Completion& c : done) {
    auto it = in_flight_.find(c.index);
    BenchRequest req = std::move(it->second);
    in_flight_.erase(it);
    RequestRecord rec = makeRecord(req, c.result, t0_);
    (rec.ok ? state_.finished : state_.failed)++;
    state_.output_tokens += rec.ok ? rec.output_tokens : 0;
    run_.records.push_back(std::move(rec));
    if (req.session_id < 0) continue;
    Session& s = sessions_[req.session_id];
    if (!c.result.ok) s.broken = true;
    s.history.push_back({"user", req.prompt_text});
    s.history.push_back({"assistant", c.result.text});
    if (!s.broken && !s.parked.empty()) {
      BenchRequest next = std::move(s.parked.front());
      s.parked.pop_front();
      double at = secondsSince(t0_) + next.think_time_s;
      ready_.push(Ready{at, seq_++, std::move(next)});
    }
  }
}

bool BenchmarkRun::budgetSpent(double now) const {
  return (options_.num_requests && dispatched_ >= *options_.num_requests) ||
         (options_.duration_s && now >= *options_.duration_s);
}

void BenchmarkRun::sendDue(double now) {
  // the earliest due request, from the workload's next or the follow-up
  // turns; pulled one at a time, so an endless workload is never drained
  // ahead of what can be sent.
  while (slotFree() && !(options_.num_requests && dispatched_ >= *options_.num_requests)) {
    bool from_workload = lookahead_ && (ready_.empty() || lookahead_->at_s < ready_.top().at_s);
    if (!from_workload && ready_.empty()) break;
    double at = from_workload ? lookahead_->at_s : ready_.top().at_s;
    if (at > now) break;
    BenchRequest req;
    if (from_workload) {
      req = std::move(lookahead_->req);
      lookahead_.reset();
      pull();
    } else {
      req = ready_.top().req;
      ready_.pop();
    }
    send(std::move(req));
  }
}

void BenchmarkRun::send(BenchRequest req) {
  static const std::vector<ChatMessage> kNoHistory;
  StreamRequest sr = shapeRequest(req, req.session_id >= 0 ? sessions_[req.session_id].history : kNoHistory,
                                  tokenizer_, options_);
  uint64_t index = req.index;
  in_flight_.emplace(index, std::move(req));
  ++dispatched_;
  client_.start(std::move(sr), [this, index](StreamResult r) {
    std::lock_guard<std::mutex> lock(mu_);
    completions_.push_back({index, std::move(r)});
    cv_.notify_one();
  });
}

void BenchmarkRun::waitForWork(double now) {
  double wake = now + 0.1;
  if (!stop_sending_ && slotFree()) {
    if (lookahead_) wake = std::min(wake, lookahead_->at_s);
    if (!ready_.empty()) wake = std::min(wake, ready_.top().at_s);
  }
  if (!stop_sending_ && options_.duration_s) wake = std::min(wake, *options_.duration_s);
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_until(lock, t0_ + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(wake)),
                 [&] { return !completions_.empty(); });
}

absl::StatusOr<RunResult> BenchmarkRun::run() {
  run_.arrival = arrivals_.describe();
  run_.workload = workload_.describe();
  pull();
  if (absl::Status s = validate(); !s.ok()) return s;

  t0_ = Clock::now();
  while (true) {
    takeCompletions();
    const double now = secondsSince(t0_);
    if (budgetSpent(now)) stop_sending_ = true;
    if (!stop_sending_) sendDue(now);

    state_.in_flight = in_flight_.size();
    state_.elapsed_s = now;
    if (progress_) progress_->update(state_);

    bool nothing_left = exhausted_ && !lookahead_ && ready_.empty();
    if ((stop_sending_ || nothing_left) && in_flight_.empty()) break;
    waitForWork(now);
  }
  double duration = secondsSince(t0_);
  state_.in_flight = 0;
  state_.elapsed_s = duration;
  if (progress_) progress_->finish(state_);
  run_.summary = summarize(run_.records, duration, slo_);
  return std::move(run_);
}

}  // namespace

absl::StatusOr<RunResult> runBenchmark(Workload& workload, ArrivalProcess& arrivals, StreamClient& client,
                                       const tokenizer::Tokenizer* tokenizer, const RunnerOptions& options,
                                       const Slo& slo, ProgressReporter* progress) {
  BenchmarkRun run(workload, arrivals, client, tokenizer, options, slo, progress);
  return run.run();
}

}  // namespace tandem::bench
