//===- SafeFilesTest.cpp - Reads and removals that follow no link ---------===//

#include "Stage/Support/SafeFiles.h"

#include "gtest/gtest.h"

#include <cstdlib>
#include <fcntl.h>
#include <fstream>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

using namespace stage::files;

namespace {

class SafeFiles : public ::testing::Test {
protected:
  void SetUp() override {
    char tmpl[] = "/tmp/stage-safefiles-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root = tmpl;
  }
  void TearDown() override {
    int fd = ::open("/tmp", O_RDONLY | O_DIRECTORY);
    removeEntryAt(fd, root.substr(5).c_str(), 4);
    ::close(fd);
  }
  void write(const std::string &path, const std::string &text) {
    std::ofstream(path) << text;
  }
  bool exists(const std::string &path) {
    struct stat st;
    return ::lstat(path.c_str(), &st) == 0;
  }
  std::string root;
};

TEST_F(SafeFiles, RemovalNeverFollowsALink) {
  ASSERT_EQ(::mkdir((root + "/victim").c_str(), 0700), 0);
  write(root + "/victim/precious", "x");
  ASSERT_EQ(::mkdir((root + "/staging").c_str(), 0700), 0);
  ASSERT_EQ(::mkdir((root + "/staging/0").c_str(), 0700), 0);
  write(root + "/staging/0/w.0.et", "y");
  ASSERT_EQ(
      ::symlink((root + "/victim").c_str(), (root + "/staging/0/link").c_str()),
      0);
  ASSERT_EQ(::symlink((root + "/victim").c_str(), (root + "/planted").c_str()),
            0);
  int fd = ::open(root.c_str(), O_RDONLY | O_DIRECTORY);
  EXPECT_TRUE(removeEntryAt(fd, "staging", 2));
  EXPECT_TRUE(removeEntryAt(fd, "planted", 2)); // the link, not its target
  ::close(fd);
  EXPECT_FALSE(exists(root + "/staging"));
  EXPECT_FALSE(exists(root + "/planted"));
  EXPECT_TRUE(exists(root + "/victim/precious"));
}

TEST_F(SafeFiles, RemovalStopsAtItsDepth) {
  ASSERT_EQ(::mkdir((root + "/a").c_str(), 0700), 0);
  ASSERT_EQ(::mkdir((root + "/a/b").c_str(), 0700), 0);
  write(root + "/a/b/c", "z");
  int fd = ::open(root.c_str(), O_RDONLY | O_DIRECTORY);
  EXPECT_FALSE(removeEntryAt(fd, "a", 1));
  ::close(fd);
  EXPECT_TRUE(exists(root + "/a/b/c"));
}

TEST_F(SafeFiles, ReadsOnlyRegularFilesWithinTheLimit) {
  write(root + "/f", "12345");
  std::string error;
  auto buf = readRegularFile(root + "/f", 5, error);
  ASSERT_TRUE(buf) << error;
  EXPECT_EQ(buf->getBuffer(), "12345");
  EXPECT_FALSE(readRegularFile(root + "/f", 4, error));
  EXPECT_NE(error.find("more than the limit of 4 bytes"), std::string::npos);
  ASSERT_EQ(::mkfifo((root + "/fifo").c_str(), 0600), 0);
  EXPECT_FALSE(readRegularFile(root + "/fifo", 1 << 20, error)); // no wait
  EXPECT_NE(error.find("is a FIFO"), std::string::npos);
  EXPECT_FALSE(readRegularFile("/dev/zero", 1 << 20, error));
  EXPECT_NE(error.find("character device"), std::string::npos);
  bool missing = false;
  EXPECT_FALSE(readRegularFile(root + "/none", 1, error, &missing));
  EXPECT_TRUE(missing);
}

} // namespace
