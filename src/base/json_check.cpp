#include "base/json_check.h"

#include <cctype>

namespace aclvmm {
namespace {

class Checker {
 public:
  explicit Checker(const std::string& s) : s_(s) {}

  bool document(std::string* why) {
    skip();
    if (peek() != '{') return fail(why, "the top level must be an object");
    if (!value(0)) return fail(why, error_);
    skip();
    if (pos_ != s_.size()) return fail(why, "text after the top-level object");
    return true;
  }

 private:
  char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  void skip() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool fail(std::string* why, const std::string& msg) {
    *why = msg + " (at byte " + std::to_string(pos_) + ")";
    return false;
  }
  bool err(const char* msg) {
    error_ = msg;
    return false;
  }
  bool literal(const char* word) {
    for (const char* p = word; *p; ++p, ++pos_) {
      if (peek() != *p) return err("unknown literal");
    }
    return true;
  }
  bool string() {
    ++pos_;  // opening quote
    while (pos_ < s_.size()) {
      char c = s_[pos_++];
      if (c == '"') return true;
      if (c == '\\') {
        if (pos_ >= s_.size()) break;
        ++pos_;
      } else if (static_cast<unsigned char>(c) < 0x20) {
        return err("control character in a string");
      }
    }
    return err("unterminated string");
  }
  bool number() {
    size_t start = pos_;
    if (peek() == '-') ++pos_;
    while (std::isdigit(static_cast<unsigned char>(peek())) || peek() == '.' || peek() == 'e' ||
           peek() == 'E' || peek() == '+' || peek() == '-') {
      ++pos_;
    }
    return pos_ > start ? true : err("unexpected character");
  }
  bool value(int depth) {
    skip();
    char c = peek();
    if (c == '{' || c == '[') {
      if (depth >= 10) return err("nested deeper than 10 levels");
      const char close = c == '{' ? '}' : ']';
      ++pos_;
      skip();
      if (peek() == close) {
        ++pos_;
        return true;
      }
      for (;;) {
        if (c == '{') {
          skip();
          if (peek() != '"') return err("expected a key");
          if (!string()) return false;
          skip();
          if (peek() != ':') return err("expected ':'");
          ++pos_;
        }
        if (!value(depth + 1)) return false;
        skip();
        if (peek() == ',') {
          ++pos_;
          continue;
        }
        if (peek() == close) {
          ++pos_;
          return true;
        }
        return err("expected ',' or a closing bracket");
      }
    }
    if (c == '"') return string();
    if (c == 't') return literal("true");
    if (c == 'f') return literal("false");
    if (c == 'n') return literal("null");
    return number();
  }

  const std::string& s_;
  size_t pos_ = 0;
  std::string error_ = "invalid JSON";
};

}  // namespace

bool json_config_valid(const std::string& text, std::string* why) {
  Checker c(text);
  return c.document(why);
}

}  // namespace aclvmm
