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

absl::StatusOr<RunResult> runBenchmark(Workload& workload, ArrivalProcess& arrivals, StreamClient& client,
                                       const tokenizer::Tokenizer* tokenizer, const RunnerOptions& options,
                                       const Slo& slo, ProgressReporter* progress) {
  RunResult run;
  run.arrival = arrivals.describe();
  run.workload = workload.describe();

  std::mutex mu;
  std::condition_variable cv;
  std::vector<Completion> completions;  // guarded by mu

  std::priority_queue<Ready, std::vector<Ready>, std::greater<Ready>> ready;
  std::unordered_map<int64_t, Session> sessions;
  std::unordered_map<uint64_t, BenchRequest> in_flight;
  std::optional<Ready> lookahead;  // the next timed request from the workload
  bool exhausted = false;
  uint64_t seq = 0, dispatched = 0;
  bool closed_loop = false;
  ProgressState state;

  // pulls until the next request that needs a send time (later turns of a
  // session are parked on it instead).
  auto pull = [&]() {
    while (!lookahead && !exhausted) {
      std::optional<BenchRequest> req = workload.next();
      if (!req) {
        exhausted = true;
        return;
      }
      if (req->session_id >= 0 && req->turn > 0) {
        sessions[req->session_id].parked.push_back(std::move(*req));
        continue;
      }
      std::optional<double> at = arrivals.next(*req);
      closed_loop = !at.has_value();
      lookahead = Ready{at.value_or(0.0), seq++, std::move(*req)};
    }
  };
  pull();
  if (closed_loop && options.max_concurrency <= 0) {
    return absl::InvalidArgumentError("closed-loop arrivals need --concurrency");
  }
  if (workload.endless() && !options.num_requests && !options.duration_s) {
    return absl::InvalidArgumentError("a random workload is endless: give --num-requests or --duration");
  }

  const Clock::time_point t0 = Clock::now();
  bool stop_sending = false;
  while (true) {
    // 1. take finished requests.
    std::vector<Completion> done;
    {
      std::lock_guard<std::mutex> lock(mu);
      done.swap(completions);
    }
    for (Completion& c : done) {
      auto it = in_flight.find(c.index);
      BenchRequest req = std::move(it->second);
      in_flight.erase(it);
      RequestRecord rec = makeRecord(req, c.result, t0);
      (rec.ok ? state.finished : state.failed)++;
      state.output_tokens += rec.ok ? rec.output_tokens : 0;
      run.records.push_back(std::move(rec));
      if (req.session_id >= 0) {
        Session& s = sessions[req.session_id];
        if (!c.result.ok) s.broken = true;
        s.history.push_back({"user", req.prompt_text});
        s.history.push_back({"assistant", c.result.text});
        if (!s.broken && !s.parked.empty()) {
          BenchRequest next = std::move(s.parked.front());
          s.parked.pop_front();
          double at = secondsSince(t0) + next.think_time_s;
          ready.push(Ready{at, seq++, std::move(next)});
        }
      }
    }
    double now = secondsSince(t0);
    if ((options.num_requests && dispatched >= *options.num_requests) ||
        (options.duration_s && now >= *options.duration_s)) {
      stop_sending = true;
    }

    // 2. send what is due.
    if (!stop_sending) {
      // the earliest due request, from the workload's next or the follow-up
      // turns; pulled one at a time, so an endless workload is never
      // drained ahead of what can be sent.
      while ((options.max_concurrency <= 0 || static_cast<int>(in_flight.size()) < options.max_concurrency) &&
             !(options.num_requests && dispatched >= *options.num_requests)) {
        bool from_workload = lookahead && (ready.empty() || lookahead->at_s < ready.top().at_s);
        if (!from_workload && ready.empty()) break;
        double at = from_workload ? lookahead->at_s : ready.top().at_s;
        if (at > now) break;
        BenchRequest req;
        if (from_workload) {
          req = std::move(lookahead->req);
          lookahead.reset();
          pull();
        } else {
          req = ready.top().req;
          ready.pop();
        }
        static const std::vector<ChatMessage> kNoHistory;
        StreamRequest sr = shapeRequest(req, req.session_id >= 0 ? sessions[req.session_id].history : kNoHistory,
                                        tokenizer, options);
        uint64_t index = req.index;
        in_flight.emplace(index, std::move(req));
        ++dispatched;
        client.start(std::move(sr), [&, index](StreamResult r) {
          std::lock_guard<std::mutex> lock(mu);
          completions.push_back({index, std::move(r)});
          cv.notify_one();
        });
      }
    }

    state.in_flight = in_flight.size();
    state.elapsed_s = now;
    if (progress) progress->update(state);

    bool nothing_left = exhausted && !lookahead && ready.empty();
    if ((stop_sending || nothing_left) && in_flight.empty()) break;

    // 3. sleep until the next send time or a completion (progress redraws
    // at least every 100 ms).
    double wake = now + 0.1;
    bool slot_free = options.max_concurrency <= 0 || static_cast<int>(in_flight.size()) < options.max_concurrency;
    if (!stop_sending && slot_free) {
      if (lookahead) wake = std::min(wake, lookahead->at_s);
      if (!ready.empty()) wake = std::min(wake, ready.top().at_s);
    }
    if (!stop_sending && options.duration_s) wake = std::min(wake, *options.duration_s);
    std::unique_lock<std::mutex> lock(mu);
    cv.wait_until(lock, t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(wake)),
                  [&] { return !completions.empty(); });
  }
  double duration = secondsSince(t0);
  state.in_flight = 0;
  state.elapsed_s = duration;
  if (progress) progress->finish(state);
  run.summary = summarize(run.records, duration, slo);
  return run;
}

}  // namespace tandem::bench
