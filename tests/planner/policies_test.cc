// The scaling policies on constructed loads: what sla sizes for long prompts
// and for chat, its hysteresis and corrections; load's thresholds; static.
#include "planner/policies.h"

#include <cmath>

#include "gtest/gtest.h"
#include "planner/queue_model.h"
#include "planner/sla_policy.h"

namespace tandem::planner {
namespace {

// a worker that prefills 10k tokens/s at any length and decodes a step in
// 10 ms + 0.1 ms per sequence (context-independent), 1M KV tokens.
WorkerProfile flatProfile() {
  absl::StatusOr<WorkerProfile> p = WorkerProfile::create(
      {{100, 10000}, {100000, 10000}},
      {{1, 100, 10.1}, {1, 100000, 10.1}, {1001, 100, 110.1}, {1001, 100000, 110.1}}, 1e6, 1024);
  EXPECT_TRUE(p.ok()) << p.status();
  return *p;
}

PolicyConfig config() {
  PolicyConfig c;
  c.ttft_slo_ms = 500;
  c.itl_slo_ms = 50;
  c.profile = flatProfile();
  return c;
}

ScalingBounds wide() { return ScalingBounds{.min = {1, 1}, .max = {1000, 1000}, .max_total = 2000}; }

LoadSample traffic(double rate, double isl, double osl) {
  LoadSample s;
  s.interval_s = 10;
  s.request_rate = rate;
  s.mean_input_tokens = isl;
  s.mean_output_tokens = osl;
  return s;
}

PolicyInputs inputs(const LoadSample& s, RoleCounts current) {
  return PolicyInputs{.observed = s, .predicted = s, .current = current, .bounds = wide()};
}

std::unique_ptr<ScalingPolicy> make(const std::string& name, PolicyConfig c = config()) {
  absl::StatusOr<std::unique_ptr<ScalingPolicy>> p = makePolicy(name, c);
  EXPECT_TRUE(p.ok()) << p.status();
  return std::move(*p);
}

TEST(PoliciesTest, FactoryRefusesUnknownNamesAndSlaWithoutAProfile) {
  for (const std::string& name : policyNames()) EXPECT_EQ(make(name)->name(), name);
  EXPECT_EQ(makePolicy("hpa", config()).status().code(), absl::StatusCode::kInvalidArgument);
  PolicyConfig no_profile;
  EXPECT_FALSE(makePolicy("sla", no_profile).ok());
  EXPECT_TRUE(makePolicy("load", no_profile).ok());
  PolicyConfig bad = config();
  bad.ttft_slo_ms = 0;
  EXPECT_FALSE(makePolicy("load", bad).ok());
}

TEST(PoliciesTest, ClampKeepsEachRoleAndTheTotalWithinBounds) {
  const ScalingBounds b{.min = {1, 2}, .max = {10, 10}, .max_total = 12};
  EXPECT_EQ(clampToBounds({0, 0}, b), (RoleCounts{1, 2}));
  EXPECT_EQ(clampToBounds({20, 3}, b), (RoleCounts{9, 3}));
  EXPECT_EQ(clampToBounds({8, 8}, b), (RoleCounts{6, 6}));
}

TEST(SlaPolicyTest, LongPromptsNeedPrefillWorkersAndChatNeedsDecodeWorkers) {
  SlaPolicy sla(config());
  // 20 req/s of 8000-token prompts and 20-token answers: 0.8 s of prefill
  // each (above the SLO, so the wait gets a quarter of it): 16 busy
  // prefill workers plus queueing headroom (M/M/25: C = 0.03, p99 wait
  // 0.10 s); decode is light.
  const RoleCounts rag = sla.size(20, 8000, 20, 0);
  EXPECT_EQ(rag.prefill, 25);
  EXPECT_LE(rag.decode, 2);
  // chat: 200-token prompts, 1000-token answers at 20 req/s: 20 000 tokens
  // in decode a second; a batch of 349 keeps the step at 44.9 ms (90% of
  // the SLO): 20 x 999 x 0.0449 = 897 in decode over 80% of 349: 4 workers.
  const RoleCounts chat = sla.size(20, 200, 1000, 0);
  EXPECT_LE(chat.prefill, 2);
  EXPECT_EQ(chat.decode, 4);
  // a cached prefix takes its share off prefill.
  EXPECT_LT(sla.size(20, 8000, 20, 0.75).prefill, rag.prefill / 2);
  EXPECT_EQ(sla.size(0, 8000, 20, 0), (RoleCounts{0, 0}));
}

TEST(SlaPolicyTest, ScalesUpAtOnceAndDownOnlyAfterAStreakAFifthAtATime) {
  PolicyConfig c = config();
  c.scale_down_after = 3;
  c.cold_start_s = 10;        // the hold: max(3, a cold start + an interval = 2) intervals
  c.burst_window_s = 10;      // the envelope remembers one interval: the hysteresis alone
  SlaPolicy sla(c);
  RoleCounts now{1, 1};
  now = sla.decide(inputs(traffic(20, 8000, 20), now)).desired;
  EXPECT_GT(now.prefill, 16);
  const int peak = now.prefill;
  // the load goes away: two intervals hold, the third takes a fifth off.
  const LoadSample idle = traffic(0, 0, 0);
  EXPECT_EQ(sla.decide(inputs(idle, now)).desired.prefill, peak);
  EXPECT_EQ(sla.decide(inputs(idle, now)).desired.prefill, peak);
  const RoleCounts down = sla.decide(inputs(idle, now)).desired;
  EXPECT_EQ(down.prefill, peak - peak / 5);
  // a busy interval in between resets the streak.
  EXPECT_EQ(sla.decide(inputs(idle, down)).desired.prefill, down.prefill);
  EXPECT_EQ(sla.decide(inputs(traffic(20, 8000, 20), down)).desired.prefill, peak);
}

TEST(SlaPolicyTest, SlowerThanPredictedTtftAddsPrefillWorkers) {
  SlaPolicy sla(config());
  const RoleCounts before = sla.size(20, 8000, 20, 0);
  // the prefill pool at that size answers at twice the p95 the model says.
  LoadSample slow = traffic(20, 8000, 20);
  slow.ttft_mean_ms = 2 * 1000 * 0.85;  // the service alone is 0.8 s, the mean wait ~0.05 s
  slow.ttft_slo_attainment = 0.5;       // and it misses the SLO
  slow.itl_mean_ms = 10.2;              // decode as predicted
  for (int i = 0; i < 10; ++i) sla.decide(inputs(slow, before));
  EXPECT_GT(sla.ttftCorrection(), 1.5);
  EXPECT_NEAR(sla.itlCorrection(), 1, 0.05);
  EXPECT_GT(sla.size(20, 8000, 20, 0).prefill, before.prefill * 3 / 2);
}

TEST(SlaPolicyTest, SlowerThanPredictedItlAddsDecodeWorkers) {
  SlaPolicy sla(config());
  const RoleCounts before = sla.size(20, 200, 1000, 0);
  LoadSample slow = traffic(20, 200, 1000);
  slow.itl_mean_ms = 80;  // the profile says ~45 ms at the batch there is
  slow.itl_slo_attainment = 0.2;
  for (int i = 0; i < 10; ++i) sla.decide(inputs(slow, before));
  EXPECT_GT(sla.itlCorrection(), 1.4);
  EXPECT_LE(sla.itlCorrection(), 2);
  EXPECT_GT(sla.size(20, 200, 1000, 0).decode, before.decode);
}

TEST(SlaPolicyTest, AQueueThatLastsThroughAColdStartIsAnsweredOnce) {
  SlaPolicy sla(config());
  // 2 ready decode workers with 700 requests waiting each: 1400 more over
  // batches of 350 (45 ms at context 700) is 4 more workers.
  LoadSample queued = traffic(1, 200, 1000);
  queued.decode_queue_requests = 700;
  queued.ready = {1, 2};
  EXPECT_EQ(sla.decide(inputs(queued, {1, 2})).desired.decode, 6);
  // next interval: the 4 are still starting, the queue is the same: no more.
  EXPECT_EQ(sla.decide(inputs(queued, {1, 6})).desired.decode, 6);
}

TEST(SlaPolicyTest, LearnsNothingFromAnOverloadedDecodePool) {
  SlaPolicy sla(config());
  LoadSample queued = traffic(20, 200, 1000);
  queued.itl_mean_ms = 500;  // requests wait to join a batch: too few workers, not a slow profile
  queued.decode_queue_requests = 30;
  for (int i = 0; i < 10; ++i) sla.decide(inputs(queued, {1, 1}));
  EXPECT_EQ(sla.itlCorrection(), 1);
}

TEST(SlaPolicyTest, AMixWithLongPromptsNeedsMorePrefillThanItsMeanPrompt) {
  PolicyConfig c = config();
  c.ttft_slo_ms = 2000;
  SlaPolicy sla(c);
  // 100 req/s: 97.2% of 1000-token prompts (0.1 s), 2% of 15 000 (1.5 s:
  // it may wait only 0.5 s) and 0.8% of 30 000 (3 s: over the SLO alone).
  PromptMix mix;
  for (int i = 0; i < 972; ++i) mix.add(1000, 1000, 20);
  for (int i = 0; i < 20; ++i) mix.add(15000, 15000, 20);
  for (int i = 0; i < 8; ++i) mix.add(30000, 30000, 20);
  const double mean = (972 * 1000.0 + 20 * 15000 + 8 * 30000) / 1000;
  const RoleCounts means = sla.size(100, mean, 20, 0);
  const RoleCounts mixed = sla.sizeForMix(100, mix);
  EXPECT_GT(mixed.prefill, means.prefill);
  // what that many reach: the 99% target (the 0.8% no count can serve
  // leave 0.2% for the waits), and one fewer does not.
  std::vector<ServiceClass> classes = {{0.972, 0.1}, {0.02, 1.5}, {0.008, 3}};
  EXPECT_GE(prefillAttainment(mixed.prefill, 100, classes, 2), 0.99);
  EXPECT_LT(prefillAttainment(mixed.prefill - 1, 100, classes, 2), 0.99);
  // a window: an empty interval leaves the mix as it was.
  sla.observeMix(mix);
  sla.observeMix(PromptMix{});
  EXPECT_EQ(sla.mix().total(), 1000);
}

TEST(SlaPolicyTest, AFasterTtftThanModelledNeverShrinksThePrefillPool) {
  SlaPolicy sla(config());
  const RoleCounts before = sla.size(20, 8000, 20, 0);
  // the prefill alone is 0.8 s; the pool answers in 0.5 s on average (the
  // wait model is pessimistic, or a cache the model missed): no reason to
  // believe the profile's prefill is slower than measured.
  LoadSample fast = traffic(20, 8000, 20);
  fast.ttft_mean_ms = 500;
  for (int i = 0; i < 10; ++i) sla.decide(inputs(fast, before));
  EXPECT_EQ(sla.ttftCorrection(), 1);
  EXPECT_EQ(sla.size(20, 8000, 20, 0).prefill, before.prefill);
}

TEST(SlaPolicyTest, APrefillBacklogThatGrewAsksAtOnceForWhatItsGrowthSaysOnce) {
  SlaPolicy sla(config());
  const RoleCounts sized = sla.size(20, 8000, 20, 0);
  ASSERT_EQ(sized.prefill, 25);
  // 20 000 tokens queued per ready prefill worker (2 s each at 10k
  // tokens/s, four times the 0.5 s SLO), none before: the arrivals asked
  // 25 x 2 s more than the 25 served in the 10 s interval, 5 workers' worth.
  LoadSample backlog = traffic(20, 8000, 20);
  backlog.prefill_queue_tokens = 20000;
  backlog.ready = sized;
  const RoleCounts up = sla.decide(inputs(backlog, sized)).desired;
  EXPECT_EQ(up.prefill, 30);
  // next interval the queue has not grown (a queued prompt stays at its
  // worker; the 5 are starting): nothing more.
  EXPECT_EQ(sla.decide(inputs(backlog, up)).desired.prefill, up.prefill);
  // a backlog of a quarter of the SLO a worker is the queue of normal work.
  backlog.prefill_queue_tokens = 1000;
  EXPECT_EQ(SlaPolicy(config()).decide(inputs(backlog, sized)).desired.prefill, sized.prefill);
}

TEST(SlaPolicyTest, TheBacklogFastPathCountsOnlyTheWorkersThatServedTheInterval) {
  PolicyConfig c = config();
  c.burst_window_s = 10;
  SlaPolicy sla(c);
  // 5 prefill workers up for light traffic; 20 more asked for.
  LoadSample light = traffic(1, 8000, 20);
  light.ready = {5, 1};
  sla.decide(inputs(light, {25, 1}));
  // the 20 came up at the interval's end, in which the queue grew to 20 000
  // tokens a ready worker: 500 000 tokens, 50 s of prefill the 5 could not
  // serve in 10 s, 5 workers' worth beyond them.
  LoadSample backlog = traffic(1, 8000, 20);
  backlog.ready = {25, 1};
  backlog.prefill_queue_tokens = 20000;
  EXPECT_EQ(sla.decide(inputs(backlog, {25, 1})).desired.prefill, 25);  // 5 + 5 are up: not 25 + 5
}

TEST(SlaPolicyTest, TheBurstEnvelopeProvisionsForTheRisesSeenAndHoldsThroughALull) {
  PolicyConfig c = config();
  c.cold_start_s = 20;  // a horizon of 3 intervals: the hold too
  SlaPolicy sla(c);
  RoleCounts now{1, 1};
  auto at = [&](double rate) {
    LoadSample s = traffic(rate, 8000, 20);
    s.ready = now;
    now = sla.decide(inputs(s, now)).desired;
    return now.prefill;
  };
  // quiet at 2 req/s, then a burst to 20 and back: up at once for it.
  for (int i = 0; i < 5; ++i) at(2);
  const int quiet = now.prefill;
  EXPECT_EQ(at(20), sla.size(20, 8000, 20, 0).prefill);
  const int burst = now.prefill;
  // back at 2: the envelope is 2 plus the rise of 18 it saw within a cold
  // start, less 3 sigma of a 2 req/s rate's counting noise over the 10 s
  // interval (at most the 20 it reached), so nearly all the workers stay
  // through the lull.
  const int held = sla.size(20 - 3 * std::sqrt(2.0 / 10), 8000, 20, 0).prefill;
  EXPECT_LT(held, burst);
  EXPECT_GT(held, burst * 9 / 10);
  for (int i = 0; i < 10; ++i) EXPECT_GE(at(2), held) << i;
  EXPECT_EQ(now.prefill, held);
  // the next burst finds them there.
  EXPECT_EQ(at(20), burst);
  EXPECT_GT(burst, 3 * quiet);
}

TEST(SlaPolicyTest, RisesWithinTheRatesCountingNoiseAreNoBurst) {
  PolicyConfig c = config();
  c.cold_start_s = 20;
  SlaPolicy sla(c);
  RoleCounts now{1, 1};
  auto at = [&](double rate, double busiest_half) {
    LoadSample s = traffic(rate, 8000, 20);
    s.peak_request_rate = busiest_half;
    s.ready = now;
    now = sla.decide(inputs(s, now)).desired;
    return now.prefill;
  };
  // a steady 40 req/s whose busiest halves count 40 to 46 (over 5 s: a
  // sigma of sqrt(40 / 5) = 2.8 req/s), then exactly 40: once the hold has
  // passed, sized for 40, not for 40 plus the noisiest rise it saw.
  for (int i = 0; i < 12; ++i) at(40, i % 2 == 0 ? 40 : 46);
  EXPECT_EQ(now.prefill, sla.size(46, 8000, 20, 0).prefill);
  for (int i = 0; i < 10; ++i) at(40, 40);
  EXPECT_EQ(now.prefill, sla.size(40, 8000, 20, 0).prefill);
  // a rise of 30 (10 sigma) is a burst: the envelope keeps most of it
  // through the lull after it.
  at(40, 70);
  for (int i = 0; i < 10; ++i) at(40, 40);
  EXPECT_GT(now.prefill, sla.size(60, 8000, 20, 0).prefill);
}

TEST(SlaPolicyTest, BurstierArrivalsNeedMorePrefillWorkersAtTheSameRate) {
  SlaPolicy sla(config());
  PromptMix mix;
  for (int i = 0; i < 100; ++i) mix.add(2000, 2000, 20);
  const int poisson = sla.sizeForMix(100, mix, 1).prefill;
  EXPECT_GT(sla.sizeForMix(100, mix, 4).prefill, poisson);
  // an interval sized as if known before it came: at its busiest half's rate.
  LoadSample interval = traffic(50, 2000, 20);
  interval.mix = mix;
  interval.peak_request_rate = 100;
  interval.arrival_scv = 1;
  EXPECT_EQ(sla.sizeForInterval(interval).prefill, poisson);
}

TEST(SlaPolicyTest, CorrectionsGoBackToOneWhileTheSloIsMet) {
  SlaPolicy sla(config());
  const RoleCounts before = sla.size(20, 8000, 20, 0);
  LoadSample slow = traffic(20, 8000, 20);
  slow.ttft_mean_ms = 2 * 1000 * 0.85;
  slow.ttft_slo_attainment = 0.5;
  for (int i = 0; i < 10; ++i) sla.decide(inputs(slow, before));
  ASSERT_GT(sla.ttftCorrection(), 1.5);
  // slower than modelled, but within the SLO: nothing to fix.
  slow.ttft_slo_attainment = 1;
  for (int i = 0; i < 20; ++i) sla.decide(inputs(slow, before));
  EXPECT_LT(sla.ttftCorrection(), 1.01);
}

TEST(SlaPolicyTest, NeverStepsDownARoleRequestsWaitOn) {
  PolicyConfig c = config();
  c.scale_down_after = 1;
  c.cold_start_s = 0;
  c.burst_window_s = 10;
  SlaPolicy sla(c);
  // light traffic, sized for 1 decode worker, but requests wait to join a
  // batch on the 4 there are, one a worker (a profile faster than the
  // serving path): no step down (the scale-up on the queue asks for more).
  LoadSample s = traffic(1, 200, 100);
  s.ready = {1, 4};
  s.decode_queue_requests = 1;
  for (int i = 0; i < 5; ++i) EXPECT_GE(sla.decide(inputs(s, {1, 4})).desired.decode, 4) << i;
  // two waiting on four workers is a moment's wait for a batch slot: down.
  s.decode_queue_requests = 0.5;
  EXPECT_EQ(sla.decide(inputs(s, {1, 4})).desired.decode, 3);
}

TEST(SlaPolicyTest, LearnsNothingFromTheFirstTokensOfAPrefillBacklog) {
  SlaPolicy sla(config());
  const RoleCounts sized = sla.size(20, 8000, 20, 0);
  // a burst left 20 000 tokens queued a prefill worker (2 s each, four
  // times the SLO): the interval's first tokens waited in that queue, not
  // in a prefill slower than the profile.
  LoadSample backlog = traffic(20, 8000, 20);
  backlog.prefill_queue_tokens = 20000;
  backlog.ready = sized;
  backlog.ttft_mean_ms = 4000;
  backlog.ttft_slo_attainment = 0.2;
  sla.decide(inputs(backlog, sized));
  // nor the interval after, whose first tokens include the backlog's last.
  backlog.prefill_queue_tokens = 0;
  sla.decide(inputs(backlog, sized));
  EXPECT_EQ(sla.ttftCorrection(), 1);
  // the next one is the prefill's own again.
  sla.decide(inputs(backlog, sized));
  EXPECT_GT(sla.ttftCorrection(), 1.5);
}

TEST(SlaPolicyTest, LearnsTheColdStartFromItsOwnWorkersArriving) {
  PolicyConfig c = config();
  c.cold_start_s = 60;
  SlaPolicy sla(c);
  EXPECT_EQ(sla.coldStartS(), 60);
  LoadSample s = traffic(20, 8000, 20);
  s.time_s = 10;
  s.ready = {1, 1};
  const RoleCounts asked = sla.decide(inputs(s, {1, 1})).desired;
  ASSERT_GT(asked.prefill, 1);
  // the workers asked for at 10 s are ready at 25 s.
  s.time_s = 20;
  sla.decide(inputs(s, asked));
  s.time_s = 25;
  s.ready = asked;
  sla.decide(inputs(s, asked));
  EXPECT_EQ(sla.coldStartS(), 15);
}

TEST(LoadPolicyTest, SaturationAddsOneWorkerOfThatRole) {
  std::unique_ptr<ScalingPolicy> load = make("load");
  LoadSample s = traffic(10, 1000, 100);
  s.decode_kv_utilization = 0.85;
  EXPECT_EQ(load->decide(inputs(s, {2, 4})).desired, (RoleCounts{2, 5}));
  s.decode_kv_utilization = 0.5;
  s.decode_queue_requests = 5;
  EXPECT_EQ(load->decide(inputs(s, {2, 4})).desired, (RoleCounts{2, 5}));
  s.decode_queue_requests = 0;
  s.prefill_queue_tokens = 5 * 1000;  // five prompts of the mean length
  EXPECT_EQ(load->decide(inputs(s, {2, 4})).desired, (RoleCounts{3, 4}));
  // between the scale-down and scale-up marks: hold.
  s.prefill_queue_tokens = 3 * 1000;
  s.decode_kv_utilization = 0.6;
  EXPECT_EQ(load->decide(inputs(s, {2, 4})).desired, (RoleCounts{2, 4}));
}

TEST(LoadPolicyTest, ScalesDownOnlyWhenNMinusOneKeepSpareRoomForAStreak) {
  PolicyConfig c = config();
  c.scale_down_after = 2;
  std::unique_ptr<ScalingPolicy> load = make("load", c);
  LoadSample s = traffic(10, 1000, 100);
  // 4 decode workers at 0.5 KV: 3 would be at 0.67, 0.83 of the threshold: keep.
  s.decode_kv_utilization = 0.5;
  for (int i = 0; i < 5; ++i) EXPECT_EQ(load->decide(inputs(s, {1, 4})).desired.decode, 4);
  // at 0.3: 3 would be at 0.4, half the threshold: -1 on the second interval.
  s.decode_kv_utilization = 0.3;
  EXPECT_EQ(load->decide(inputs(s, {1, 4})).desired.decode, 4);
  EXPECT_EQ(load->decide(inputs(s, {1, 4})).desired.decode, 3);
  // never below the bounds' minimum.
  for (int i = 0; i < 4; ++i) EXPECT_GE(load->decide(inputs(traffic(0, 0, 0), {1, 1})).desired.decode, 1);
}

TEST(StaticPolicyTest, AnswersItsCountsWithinTheBounds) {
  PolicyConfig c = config();
  c.static_counts = {6, 9};
  std::unique_ptr<ScalingPolicy> fixed = make("static", c);
  EXPECT_EQ(fixed->decide(inputs(traffic(100, 1000, 100), {1, 1})).desired, (RoleCounts{6, 9}));
  EXPECT_EQ(fixed->decide(inputs(traffic(0, 0, 0), {6, 9})).desired, (RoleCounts{6, 9}));
  PolicyInputs tight = inputs(traffic(0, 0, 0), {6, 9});
  tight.bounds.max = {4, 4};
  EXPECT_EQ(fixed->decide(tight).desired, (RoleCounts{4, 4}));
}

}  // namespace
}  // namespace tandem::planner
