//===- PlanSpace.cpp - The parallelization plans of a job -----------------===//

#include "Stage/Explore/PlanSpace.h"

#include <functional>
#include <sstream>

using namespace mlir::stage::explore;

bool Constraint::holds(int64_t x) const {
  switch (op) {
  case LE: return x <= value;
  case LT: return x < value;
  case GE: return x >= value;
  case GT: return x > value;
  case EQ: return x == value;
  case NE: return x != value;
  }
  return false;
}

static const char *const kFields[] = {"dp", "tp", "pp",   "cp", "ep",
                                      "M",  "v",  "zero", "B"};

std::optional<std::vector<Constraint>>
mlir::stage::explore::parseConstraints(const std::string &text,
                                       std::string &error) {
  std::vector<Constraint> out;
  std::istringstream words(text);
  std::string word;
  while (words >> word) {
    size_t at = word.find_first_of("<>=!");
    std::string field = word.substr(0, at);
    bool known = false;
    for (const char *f : kFields)
      known |= field == f;
    if (at == std::string::npos || at == 0 || !known) {
      error = "constraint '" + word +
              "': expected FIELD OP NUMBER, FIELD one of dp tp pp cp ep M v "
              "zero B, OP one of <= < >= > = !=";
      return std::nullopt;
    }
    static const std::pair<const char *, Constraint::Op> ops[] = {
        {"<=", Constraint::LE}, {">=", Constraint::GE},
        {"!=", Constraint::NE}, {"==", Constraint::EQ},
        {"<", Constraint::LT},  {">", Constraint::GT},
        {"=", Constraint::EQ}};
    std::string rest = word.substr(at);
    std::optional<Constraint::Op> op;
    size_t opLength = 0;
    for (auto [spelling, o] : ops)
      if (rest.rfind(spelling, 0) == 0) {
        op = o;
        opLength = std::string(spelling).size();
        break;
      }
    std::string number = rest.substr(opLength);
    bool digits = op && !number.empty() && number.size() < 18 &&
                  number.find_first_not_of("0123456789") == std::string::npos;
    if (!digits) {
      error = "constraint '" + word +
              "': expected FIELD OP NUMBER, FIELD one of dp tp pp cp ep M v "
              "zero B, OP one of <= < >= > = !=";
      return std::nullopt;
    }
    out.push_back({field, *op, std::stoll(number)});
  }
  return out;
}

int64_t Plan::field(const std::string &name) const {
  if (name == "dp") return dp;
  if (name == "tp") return tp;
  if (name == "pp") return pp;
  if (name == "cp") return cp;
  if (name == "ep") return ep;
  if (name == "M") return microBatches;
  if (name == "v") return virtualStages;
  if (name == "B")
    return batch;
  return zero;
}

std::string Plan::options() const {
  if (serving)
    return "dp=" + std::to_string(dp) + " tp=" + std::to_string(tp) +
           " pp=" + std::to_string(pp) + " cp=" + std::to_string(cp) +
           " ep=" + std::to_string(ep) +
           " micro-batches=" + std::to_string(microBatches) +
           " sp=" + (sp ? "1" : "0") +
           " decode-tokens=" + std::to_string(decodeTokens);
  std::string s = "dp=" + std::to_string(dp) + " tp=" + std::to_string(tp) +
                  " pp=" + std::to_string(pp) + " cp=" + std::to_string(cp) +
                  " ep=" + std::to_string(ep) +
                  " micro-batches=" + std::to_string(microBatches) +
                  " schedule=" + schedule;
  if (schedule == "interleaved")
    s += " virtual-stages=" + std::to_string(virtualStages);
  s += " zero=" + std::to_string(zero) + " recompute=" + recompute +
       " sp=" + (sp ? "1" : "0");
  return s;
}

static std::vector<int64_t> divisors(int64_t n) {
  std::vector<int64_t> out;
  for (int64_t d = 1; d <= n; ++d)
    if (n % d == 0)
      out.push_back(d);
  return out;
}

/// Why these degrees cannot split the model (empty if they can).
static std::string degreeProblem(const ModelLimits &m, int64_t tp, int64_t pp,
                                 int64_t cp, int64_t ep, int64_t dp) {
  if (m.heads % tp || m.ffn % tp)
    return "tp does not divide the heads and the FFN width";
  if (m.kvHeads % tp && tp % m.kvHeads)
    return "tp and the kv heads do not divide one another";
  if (m.vocab % tp)
    return "tp does not divide the vocabulary";
  if (m.experts == 0 && ep > 1)
    return "ep on a dense model";
  if (m.experts && m.experts % ep)
    return "ep does not divide the experts";
  if (m.seq % cp)
    return "cp does not divide the sequence";
  if (pp > m.layers)
    return "more pipeline stages than layers";
  if (m.batch % (dp * ep))
    return "dp x ep does not divide the batch";
  return "";
}

/// Why `schedule` cannot run (empty if it can).
static std::string scheduleProblem(const ModelLimits &m, const Plan &p) {
  int64_t pp = p.pp, M = p.microBatches;
  if (p.schedule == "interleaved") {
    if (M % pp)
      return "interleaved: M is not a multiple of pp";
    if (m.layers < pp * p.virtualStages)
      return "interleaved: fewer layers than chunks";
  }
  if ((p.schedule == "zb-v" || p.schedule == "dualpipe-v") &&
      m.layers < 2 * pp)
    return "V schedule: fewer layers than 2 pp";
  if ((p.schedule == "dualpipe-v" || p.schedule == "dualpipe") && M < 2 * pp)
    return "DualPipe: fewer than 2 pp micro-batches";
  if (p.schedule == "dualpipe" && (pp % 2 || M % 2))
    return "DualPipe: odd pp or M";
  return "";
}

/// Serving plans: every batch up to the model's (powers of two and the
/// model's own) that dp x ep x M divides, M pipelined over pp (1 without a
/// pipeline), sp where tp splits the prefill's sequence.
static void
enumerateServingPlans(const ModelLimits &m, const SpaceOptions &o, int64_t pp,
                      int64_t tp, int64_t cp, int64_t ep, int64_t dp,
                      const std::function<bool(const Plan &)> &allowed,
                      PlanSpace &space) {
  std::vector<int64_t> batches;
  for (int64_t b = 1; b < m.batch; b *= 2)
    batches.push_back(b);
  batches.push_back(m.batch);
  for (int64_t batch : batches) {
    if (batch % (dp * ep)) {
      ++space.excluded["batch: dp x ep does not divide it"];
      continue;
    }
    std::vector<int64_t> counts = {1};
    if (pp > 1)
      counts = divisors(batch / (dp * ep));
    for (int64_t M : counts)
      for (bool sp : {false, true}) {
        if (sp && tp == 1)
          continue;
        if (sp && m.seq % (tp * cp)) {
          ++space.excluded["sp: tp x cp does not divide the sequence"];
          continue;
        }
        Plan p;
        p.serving = true;
        p.dp = dp, p.tp = tp, p.pp = pp, p.cp = cp, p.ep = ep;
        p.microBatches = M;
        p.sp = sp;
        p.batch = batch;
        p.decodeTokens = o.decodeTokens;
        if (!allowed(p)) {
          ++space.excluded["constraints"];
          continue;
        }
        space.plans.push_back(std::move(p));
      }
  }
}

PlanSpace mlir::stage::explore::enumeratePlans(const ModelLimits &m,
                                               const SpaceOptions &o) {
  PlanSpace space;
  int64_t n = o.gpus;
  if (n < 1)
    return space;
  std::function<bool(const Plan &)> allowed = [&](const Plan &p) {
    for (const Constraint &c : o.constraints)
      if (!c.holds(p.field(c.field)))
        return false;
    return true;
  };
  for (int64_t pp : divisors(n))
    for (int64_t tp : divisors(n / pp))
      for (int64_t cp : divisors(n / pp / tp))
        for (int64_t ep : divisors(n / pp / tp / cp)) {
          int64_t dp = n / pp / tp / cp / ep;
          if (std::string why = degreeProblem(m, tp, pp, cp, ep, dp);
              !why.empty()) {
            ++space.excluded["degrees: " + why];
            continue;
          }
          if (o.serving && cp > 1) {
            // cp splits a prompt's positions; a decode step has one.
            ++space.excluded["serving: cp splits the prefill only, and every "
                             "request decodes"];
            continue;
          }
          if (o.serving) {
            enumerateServingPlans(m, o, pp, tp, cp, ep, dp, allowed, space);
            continue;
          }
          std::vector<std::pair<std::string, int64_t>> schedules = {
              {"1f1b", 1}};
          if (pp > 1) {
            schedules = {{"gpipe", 1}, {"1f1b", 1}};
            for (int64_t v = 2; v <= o.maxVirtualStages; ++v)
              schedules.push_back({"interleaved", v});
            for (const char *s : {"zb-h1", "zb-v", "dualpipe-v", "dualpipe"})
              schedules.push_back({s, std::string(s) == "zb-h1" ? 1 : 2});
          }
          int64_t zeros = dp * cp * ep > 1 ? 3 : 0;
          for (int64_t M : divisors(m.batch / (dp * ep)))
            for (auto [schedule, v] : schedules) {
              Plan p;
              p.dp = dp, p.tp = tp, p.pp = pp, p.cp = cp, p.ep = ep;
              p.microBatches = M;
              p.schedule = schedule;
              p.virtualStages = v;
              if (std::string why = scheduleProblem(m, p); !why.empty()) {
                ++space.excluded["schedule: " + why];
                continue;
              }
              for (int zero = 0; zero <= zeros; ++zero)
                for (const char *recompute : {"none", "selective", "full"})
                  for (bool sp : {false, true}) {
                    if (sp && tp == 1)
                      continue;
                    if (sp && m.seq % (tp * cp)) {
                      ++space.excluded["sp: tp x cp does not divide the "
                                       "sequence"];
                      continue;
                    }
                    Plan q = p;
                    q.zero = zero;
                    q.recompute = recompute;
                    q.sp = sp;
                    if (!allowed(q)) {
                      ++space.excluded["constraints"];
                      continue;
                    }
                    space.plans.push_back(std::move(q));
                  }
            }
        }
  return space;
}
