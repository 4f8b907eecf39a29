//===- RequestWorkload.cpp - Requests arriving at a server ----------------===//

#include "Stage/Support/RequestWorkload.h"

#include "Stage/Support/JsonLimits.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/JSON.h"

#include <algorithm>
#include <cmath>
#include <random>

using namespace stage;
using llvm::StringRef;

namespace {
/// The longest prompt or output a request may ask for: far above any
/// model's context, low enough that sums over a stream stay exact.
constexpr int64_t kMaxTokens = int64_t(1) << 31;
constexpr size_t kMaxRequests = size_t(1) << 24;

WorkloadError at(unsigned line, unsigned column, std::string message) {
  return {std::move(message), line, column};
}

std::optional<int64_t> tokenCount(double v) {
  if (!(v >= 1) || v > double(kMaxTokens) || v != std::floor(v))
    return std::nullopt;
  return int64_t(v);
}

std::optional<WorkloadError> parseJsonLines(StringRef text,
                                            std::vector<Request> &out) {
  unsigned line = 0;
  while (!text.empty()) {
    auto [row, rest] = text.split('\n');
    text = rest;
    ++line;
    if (row.trim().empty())
      continue;
    // A line nested deeper than a request is refused before it is parsed.
    llvm::Expected<llvm::json::Value> v =
        sym::parseJsonWithinLimits(row, sym::JsonLimits{4, 1 << 20});
    if (!v)
      return at(line, 1, "not JSON: " + llvm::toString(v.takeError()));
    const llvm::json::Object *o = v->getAsObject();
    if (!o)
      return at(line, 1, "expected an object");
    Request r;
    std::optional<double> arrival = o->getNumber("arrival");
    if (!arrival || !std::isfinite(*arrival) || *arrival < 0)
      return at(line, 1, "'arrival' must be a number of seconds, not negative");
    r.arrival = *arrival;
    for (auto [key, field] :
         {std::pair<const char *, int64_t *>{"prompt_tokens", &r.promptTokens},
          {"output_tokens", &r.outputTokens}}) {
      std::optional<double> n = o->getNumber(key);
      std::optional<int64_t> count = n ? tokenCount(*n) : std::nullopt;
      if (!count)
        return at(line, 1,
                  std::string("'") + key + "' must be a positive integer");
      *field = *count;
    }
    out.push_back(r);
    if (out.size() > kMaxRequests)
      return at(line, 1, "more than 2^24 requests");
  }
  return std::nullopt;
}

/// Seconds since 1970 of a civil date and time (proleptic Gregorian).
std::optional<double> parseTimestamp(StringRef s) {
  int64_t y, mo, d, h, mi;
  StringRef date = s.take_front(10), time = s.drop_front(std::min<size_t>(11, s.size()));
  if (s.size() < 19 || date[4] != '-' || date[7] != '-' ||
      (s[10] != ' ' && s[10] != 'T') || time[2] != ':' || time[5] != ':' ||
      date.substr(0, 4).getAsInteger(10, y) ||
      date.substr(5, 2).getAsInteger(10, mo) ||
      date.substr(8, 2).getAsInteger(10, d) ||
      time.substr(0, 2).getAsInteger(10, h) ||
      time.substr(3, 2).getAsInteger(10, mi) || mo < 1 || mo > 12 || d < 1 ||
      d > 31 || h > 23 || mi > 59)
    return std::nullopt;
  double sec;
  if (time.drop_front(6).getAsDouble(sec) || sec < 0 || sec >= 61)
    return std::nullopt;
  // Days from 1970-01-01: years counted from March, so that the leap day
  // ends a year.
  int64_t yy = mo <= 2 ? y - 1 : y;
  int64_t era = (yy >= 0 ? yy : yy - 399) / 400;
  int64_t yoe = yy - era * 400;
  int64_t doy = (153 * (mo > 2 ? mo - 3 : mo + 9) + 2) / 5 + d - 1;
  int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  int64_t days = era * 146097 + doe - 719468;
  return double(days) * 86400 + double(h) * 3600 + double(mi) * 60 + sec;
}

std::optional<WorkloadError> parseCsv(StringRef text,
                                      std::vector<Request> &out) {
  unsigned line = 0;
  int arrivalCol = -1, promptCol = -1, outputCol = -1;
  bool timestamps = false;
  std::optional<double> firstTimestamp;
  while (!text.empty()) {
    auto [row, rest] = text.split('\n');
    text = rest;
    ++line;
    row = row.rtrim("\r");
    if (row.trim().empty())
      continue;
    llvm::SmallVector<StringRef> fields;
    row.split(fields, ',');
    auto column = [&](size_t i) {
      return unsigned(fields[i].data() - row.data()) + 1;
    };
    if (arrivalCol < 0) {
      for (auto [i, f] : llvm::enumerate(fields)) {
        StringRef name = f.trim().trim('"');
        if (name == "arrival" || name == "TIMESTAMP") {
          arrivalCol = int(i);
          timestamps = name == "TIMESTAMP";
        } else if (name == "prompt_tokens" || name == "ContextTokens") {
          promptCol = int(i);
        } else if (name == "output_tokens" || name == "GeneratedTokens") {
          outputCol = int(i);
        }
      }
      if (arrivalCol < 0 || promptCol < 0 || outputCol < 0)
        return at(line, 1,
                  "the header must name the columns arrival, prompt_tokens "
                  "and output_tokens (or TIMESTAMP, ContextTokens and "
                  "GeneratedTokens)");
      continue;
    }
    size_t needed = size_t(std::max({arrivalCol, promptCol, outputCol})) + 1;
    if (fields.size() < needed)
      return at(line, 1,
                "expected " + std::to_string(needed) + " fields, found " +
                    std::to_string(fields.size()));
    Request r;
    StringRef a = fields[arrivalCol].trim().trim('"');
    if (timestamps) {
      std::optional<double> t = parseTimestamp(a);
      if (!t)
        return at(line, column(arrivalCol),
                  "expected a timestamp YYYY-MM-DD HH:MM:SS[.fraction], found '" +
                      a.str() + "'");
      if (!firstTimestamp)
        firstTimestamp = *t;
      r.arrival = *t - *firstTimestamp;
      if (r.arrival < 0)
        return at(line, column(arrivalCol),
                  "timestamp before the first row's");
    } else if (a.getAsDouble(r.arrival) || !std::isfinite(r.arrival) ||
               r.arrival < 0) {
      return at(line, column(arrivalCol),
                "arrival must be a number of seconds, not negative");
    }
    for (auto [col, field] : {std::pair<int, int64_t *>{promptCol, &r.promptTokens},
                              {outputCol, &r.outputTokens}}) {
      StringRef f = fields[col].trim().trim('"');
      double v;
      std::optional<int64_t> n =
          f.getAsDouble(v) ? std::nullopt : tokenCount(v);
      if (!n)
        return at(line, column(col),
                  "a token count must be a positive integer, found '" +
                      f.str() + "'");
      *field = *n;
    }
    out.push_back(r);
    if (out.size() > kMaxRequests)
      return at(line, 1, "more than 2^24 requests");
  }
  if (arrivalCol < 0)
    return at(0, 0, "no header");
  return std::nullopt;
}

/// Uniform in [0, 1) from 53 bits of the generator's output.
double uniform(std::mt19937_64 &g) { return double(g() >> 11) * 0x1.0p-53; }

struct LengthDistribution {
  enum Kind { Fixed, Uniform, Exponential, LogNormal } kind = Fixed;
  double a = 0, b = 0;

  int64_t draw(std::mt19937_64 &g) const {
    double v = a;
    switch (kind) {
    case Fixed:
      break;
    case Uniform:
      v = a + std::floor(uniform(g) * (b - a + 1));
      break;
    case Exponential:
      v = std::round(-a * std::log1p(-uniform(g)));
      break;
    case LogNormal: {
      // Box-Muller: one normal from two uniforms.
      double u1 = 1 - uniform(g), u2 = uniform(g);
      double z = std::sqrt(-2 * std::log(u1)) * std::cos(2 * M_PI * u2);
      v = std::round(a * std::exp(b * z));
      break;
    }
    }
    return int64_t(std::clamp(v, 1.0, double(kMaxTokens)));
  }
};

std::optional<std::string> parseLength(StringRef text, LengthDistribution &d) {
  llvm::SmallVector<StringRef> parts;
  text.split(parts, ':');
  auto number = [&](StringRef s, double &v) {
    return !s.getAsDouble(v) && std::isfinite(v) && v >= 0;
  };
  d.kind = llvm::StringSwitch<LengthDistribution::Kind>(parts[0])
               .Case("uniform", LengthDistribution::Uniform)
               .Case("exponential", LengthDistribution::Exponential)
               .Case("lognormal", LengthDistribution::LogNormal)
               .Default(LengthDistribution::Fixed);
  size_t args = d.kind == LengthDistribution::Fixed         ? 1
                : d.kind == LengthDistribution::Exponential ? 2
                                                            : 3;
  StringRef first = d.kind == LengthDistribution::Fixed ? parts[0] : "";
  bool ok = parts.size() == args;
  if (ok && d.kind == LengthDistribution::Fixed)
    ok = number(first, d.a) && tokenCount(d.a);
  if (ok && args >= 2)
    ok = number(parts[1], d.a) && d.a >= 1 && d.a <= double(kMaxTokens);
  if (ok && args == 3)
    ok = number(parts[2], d.b) &&
         (d.kind != LengthDistribution::Uniform ||
          (d.b >= d.a && d.b <= double(kMaxTokens) && d.a == std::floor(d.a) &&
           d.b == std::floor(d.b))) &&
         (d.kind != LengthDistribution::LogNormal || d.b <= 4);
  if (!ok)
    return "bad length '" + text.str() +
           "': expected N, uniform:A:B (A <= B), exponential:MEAN or "
           "lognormal:MEDIAN:SIGMA (SIGMA <= 4), lengths at least 1";
  return std::nullopt;
}
} // namespace

std::optional<WorkloadError> stage::parseRequests(StringRef text, bool csv,
                                                  std::vector<Request> &out) {
  out.clear();
  std::optional<WorkloadError> e =
      csv ? parseCsv(text, out) : parseJsonLines(text, out);
  if (e)
    return e;
  if (out.empty())
    return at(0, 0, "no requests");
  std::stable_sort(out.begin(), out.end(),
                   [](const Request &a, const Request &b) {
                     return a.arrival < b.arrival;
                   });
  return std::nullopt;
}

bool stage::isSyntheticWorkload(StringRef spec) {
  return spec.starts_with("poisson:") || spec.starts_with("periodic:");
}

std::optional<std::string> stage::generateRequests(StringRef spec,
                                                   std::vector<Request> &out) {
  out.clear();
  auto [kind, rest] = spec.split(':');
  bool poisson = kind == "poisson";
  if (!poisson && kind != "periodic")
    return "unknown stream '" + kind.str() + "': expected poisson or periodic";
  double rate = 0;
  int64_t count = 0;
  uint64_t seed = 1;
  LengthDistribution prompt, output;
  bool havePrompt = false, haveOutput = false;
  llvm::SmallVector<StringRef> items;
  rest.split(items, ',', -1, /*KeepEmpty=*/false);
  for (StringRef item : items) {
    auto [key, value] = item.split('=');
    key = key.trim();
    value = value.trim();
    if (key == "rate") {
      if (value.getAsDouble(rate) || !std::isfinite(rate) || rate <= 0)
        return "rate must be a positive number of requests per second";
    } else if (key == "count") {
      if (value.getAsInteger(10, count) || count < 1 ||
          count > int64_t(kMaxRequests))
        return "count must be an integer from 1 to 2^24";
    } else if (key == "seed") {
      if (value.getAsInteger(10, seed))
        return "seed must be a non-negative integer";
    } else if (key == "prompt" || key == "output") {
      bool isPrompt = key == "prompt";
      if (std::optional<std::string> e =
              parseLength(value, isPrompt ? prompt : output))
        return key.str() + ": " + *e;
      (isPrompt ? havePrompt : haveOutput) = true;
    } else {
      return "unknown key '" + key.str() +
             "': expected rate, count, prompt, output or seed";
    }
  }
  if (!count || !havePrompt || !haveOutput)
    return "a stream needs count, prompt and output (as in poisson:rate=4,"
           "count=1000,prompt=uniform:128:2048,output=exponential:256)";
  if (poisson && rate == 0)
    return "a poisson stream needs a rate";
  // One generator per quantity, so that changing the lengths leaves the
  // arrivals as they were.
  std::mt19937_64 arrivals(seed), prompts(seed + 1), outputs(seed + 2);
  double t = 0;
  for (int64_t i = 0; i < count; ++i) {
    if (i > 0 && rate > 0)
      t += poisson ? -std::log1p(-uniform(arrivals)) / rate : 1 / rate;
    out.push_back({t, prompt.draw(prompts), output.draw(outputs)});
  }
  return std::nullopt;
}
