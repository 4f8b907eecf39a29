//===- DeviceProfileTest.cpp - Device profiles as data --------------------===//

#include "Stage/Support/DeviceProfile.h"

#include "llvm/Support/JSON.h"

#include "gtest/gtest.h"

using namespace stage;

namespace {

TEST(DeviceProfile, ShippedProfilesParseAndCiteEveryNumber) {
  const auto &texts = getShippedProfileTexts();
  // The devices the time model is validated and compared on.
  for (const char *name : {"a100-40gb", "a100-80gb", "h100", "h800", "h200",
                           "b200", "mi300x"})
    EXPECT_TRUE(texts.count(name)) << name;
  for (const auto &[name, text] : texts) {
    std::string error;
    std::optional<DeviceProfile> p = DeviceProfile::parse(text, name, error);
    ASSERT_TRUE(p) << name << ": " << error;
    EXPECT_EQ(p->name, name);
    // Every number is an entry with its source.
    llvm::Expected<llvm::json::Value> json = llvm::json::parse(text);
    ASSERT_TRUE(bool(json));
    for (const auto &[key, value] : *json->getAsObject()) {
      if (key == "name" || key == "description")
        continue;
      const llvm::json::Object *entry = value.getAsObject();
      ASSERT_TRUE(entry) << name << "." << key.str() << " has no source";
      std::optional<llvm::StringRef> source = entry->getString("source");
      ASSERT_TRUE(source) << name << "." << key.str();
      EXPECT_GT(source->size(), 20u) << name << "." << key.str();
    }
    // Efficiencies are fractions of the peaks, below one.
    for (double e : {p->matmulEfficiency, p->memoryEfficiency,
                     p->linkEfficiency, p->networkEfficiency})
      EXPECT_TRUE(e > 0 && e < 1) << name;
  }
}

TEST(DeviceProfile, ReadsAUsersProfile) {
  std::string error;
  std::optional<DeviceProfile> p = DeviceProfile::parse(
      R"({"matrix_flops": 100e12, "memory_bandwidth": 1e12,
          "memory_capacity": 16e9, "link_bandwidth": 50e9,
          "matmul_efficiency": {"value": 0.5, "source": "mine"},
          "all_to_all": "ring"})",
      "mine", error);
  ASSERT_TRUE(p) << error;
  EXPECT_EQ(p->name, "mine");
  EXPECT_EQ(p->matmulFlops, 100e12);
  EXPECT_EQ(p->vectorFlops, 100e12); // not given: the matrix rate
  EXPECT_EQ(p->matmulEfficiency, 0.5);
  EXPECT_EQ(p->sources.at("matmul_efficiency"), "mine");
  EXPECT_TRUE(p->ringAllToAll);
  EXPECT_EQ(p->displayName(), "mine");
  p->overridden = {"peak-flops"};
  EXPECT_EQ(p->displayName(), "mine with peak-flops overridden");
}

TEST(DeviceProfile, RefusesWhatItCannotUse) {
  const char *base = R"({"matrix_flops": 1e12, "memory_bandwidth": 1e12,
                         "memory_capacity": 1e9, "link_bandwidth": 1e9)";
  struct Case {
    std::string extra, message;
  } cases[] = {
      {R"(, "matrix_flop": 1)", "unknown key \"matrix_flop\""},
      {R"(, "matmul_efficiency": 1.5)",
       "\"matmul_efficiency\" must be a number above 0 and at most 1"},
      {R"(, "link_latency": -1)", "\"link_latency\" must be a number at least 0"},
      {R"(, "vector_flops": {"value": 1e12, "unit": "x"})",
       "\"vector_flops\" has the key \"unit\""},
      {R"(, "all_to_all": "tree")", "\"all_to_all\" must be \"ring\" or"},
  };
  for (const Case &c : cases) {
    std::string error;
    EXPECT_FALSE(DeviceProfile::parse(std::string(base) + c.extra + "}", "x",
                                      error));
    EXPECT_NE(error.find(c.message), std::string::npos) << error;
  }
  std::string error;
  EXPECT_FALSE(DeviceProfile::parse(R"({"matrix_flops": 1e12})", "x", error));
  EXPECT_NE(error.find("\"memory_bandwidth\" is missing"), std::string::npos)
      << error;
}

} // namespace
