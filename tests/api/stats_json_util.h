// A minimal JSON reader for aclvmmStatsJson() and ACLVMM_STATS_FILE, plus the live counts: single
// ones (integration tests) and a snapshot of all that must not move when a call fails
// (robustness, injection, stats, concurrency tests).
#pragma once

#include <gtest/gtest.h>

#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "aclvmm/aclvmm.h"

namespace aclvmm_test {

struct Json {
  enum Type { kNull, kBool, kInt, kDouble, kString, kArray, kObject } type = kNull;
  bool b = false;
  long long i = 0;
  double d = 0;
  std::string s;
  std::vector<Json> arr;
  std::vector<std::pair<std::string, Json>> obj;

  const Json* get(const std::string& key) const {
    if (type != kObject) return nullptr;
    for (const auto& kv : obj) {
      if (kv.first == key) return &kv.second;
    }
    return nullptr;
  }
  // "a.b.c": nested object lookup.
  const Json* path(const std::string& dotted) const {
    const Json* cur = this;
    size_t start = 0;
    while (cur && start <= dotted.size()) {
      size_t dot = dotted.find('.', start);
      std::string key = dotted.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
      cur = cur->get(key);
      if (dot == std::string::npos) break;
      start = dot + 1;
    }
    return cur;
  }
};

class JsonParser {
 public:
  explicit JsonParser(const std::string& text) : t_(text) {}
  bool parse(Json* out) {
    if (!value(out)) return false;
    ws();
    return p_ == t_.size();
  }

 private:
  void ws() {
    while (p_ < t_.size() && std::isspace(static_cast<unsigned char>(t_[p_]))) ++p_;
  }
  bool lit(const char* w) {
    size_t n = std::char_traits<char>::length(w);
    if (t_.compare(p_, n, w) != 0) return false;
    p_ += n;
    return true;
  }
  bool str(std::string* out) {
    if (p_ >= t_.size() || t_[p_] != '"') return false;
    ++p_;
    while (p_ < t_.size() && t_[p_] != '"') {
      char c = t_[p_++];
      if (c == '\\') {
        if (p_ >= t_.size()) return false;
        char e = t_[p_++];
        if (e == 'u') {
          if (p_ + 4 > t_.size()) return false;
          p_ += 4;
          out->push_back('?');
          continue;
        }
        c = e == 'n' ? '\n' : e == 't' ? '\t' : e == 'r' ? '\r' : e == 'b' ? '\b' : e == 'f' ? '\f' : e;
      }
      out->push_back(c);
    }
    if (p_ >= t_.size()) return false;
    ++p_;
    return true;
  }
  bool value(Json* v) {
    ws();
    if (p_ >= t_.size()) return false;
    char c = t_[p_];
    if (c == '{') {
      ++p_;
      v->type = Json::kObject;
      ws();
      if (p_ < t_.size() && t_[p_] == '}') return ++p_, true;
      for (;;) {
        ws();
        std::string key;
        if (!str(&key)) return false;
        ws();
        if (p_ >= t_.size() || t_[p_] != ':') return false;
        ++p_;
        Json child;
        if (!value(&child)) return false;
        v->obj.emplace_back(std::move(key), std::move(child));
        ws();
        if (p_ < t_.size() && t_[p_] == ',') { ++p_; continue; }
        if (p_ < t_.size() && t_[p_] == '}') return ++p_, true;
        return false;
      }
    }
    if (c == '[') {
      ++p_;
      v->type = Json::kArray;
      ws();
      if (p_ < t_.size() && t_[p_] == ']') return ++p_, true;
      for (;;) {
        Json child;
        if (!value(&child)) return false;
        v->arr.push_back(std::move(child));
        ws();
        if (p_ < t_.size() && t_[p_] == ',') { ++p_; continue; }
        if (p_ < t_.size() && t_[p_] == ']') return ++p_, true;
        return false;
      }
    }
    if (c == '"') {
      v->type = Json::kString;
      return str(&v->s);
    }
    if (lit("true")) { v->type = Json::kBool; v->b = true; return true; }
    if (lit("false")) { v->type = Json::kBool; v->b = false; return true; }
    if (lit("null")) { v->type = Json::kNull; return true; }
    size_t start = p_;
    if (t_[p_] == '-') ++p_;
    bool is_double = false;
    while (p_ < t_.size() && (std::isdigit(static_cast<unsigned char>(t_[p_])) || t_[p_] == '.' ||
                              t_[p_] == 'e' || t_[p_] == 'E' || t_[p_] == '+' || t_[p_] == '-')) {
      if (!std::isdigit(static_cast<unsigned char>(t_[p_]))) is_double = true;
      ++p_;
    }
    if (p_ == start) return false;
    std::string num = t_.substr(start, p_ - start);
    if (is_double) {
      v->type = Json::kDouble;
      v->d = std::strtod(num.c_str(), nullptr);
    } else {
      v->type = Json::kInt;
      v->i = std::strtoll(num.c_str(), nullptr, 10);
    }
    return true;
  }

  const std::string& t_;
  size_t p_ = 0;
};

inline bool parse_json(const std::string& text, Json* out) { return JsonParser(text).parse(out); }

// aclvmmStatsJson() parsed; fails the current test when it is not valid JSON.
inline Json stats() {
  const char* text = aclvmmStatsJson();
  Json j;
  EXPECT_NE(text, nullptr);
  if (text) {
    EXPECT_TRUE(parse_json(text, &j)) << text;
  }
  return j;
}

// An integer at a dotted path of the statistics, or -1 when absent / not an integer.
inline long long stat_int(const Json& j, const std::string& dotted) {
  const Json* v = j.path(dotted);
  return v && v->type == Json::kInt ? v->i : -1;
}

// memory_used of the device with the given id (-1 when absent).
inline long long device_used(const Json& j, int id) {
  const Json* devs = j.get("devices");
  if (!devs || devs->type != Json::kArray) return -1;
  for (const Json& d : devs->arr) {
    const Json* did = d.get("id");
    const Json* used = d.get("memory_used");
    if (did && did->type == Json::kInt && did->i == id && used && used->type == Json::kInt) return used->i;
  }
  return -1;
}

// A counter of the "live" section ("physical_handles", "reservations", "mappings", ...); -1 when
// absent.
inline long long live_count(const std::string& key) { return stat_int(stats(), "live." + key); }

// Everything a failed call must leave unchanged: every integer under "live" and each device's
// memory_used.
using LiveCounts = std::map<std::string, long long>;
inline LiveCounts live_counts() {
  Json j = stats();
  LiveCounts out;
  if (const Json* live = j.get("live")) {
    for (const auto& kv : live->obj) {
      if (kv.second.type == Json::kInt) out["live." + kv.first] = kv.second.i;
    }
  }
  if (const Json* devs = j.get("devices")) {
    for (const Json& d : devs->arr) {
      const Json* id = d.get("id");
      const Json* used = d.get("memory_used");
      if (id && used) out["device" + std::to_string(id->i) + ".memory_used"] = used->i;
    }
  }
  return out;
}

inline std::string describe(const LiveCounts& c) {
  std::string s;
  for (const auto& kv : c) s += kv.first + "=" + std::to_string(kv.second) + " ";
  return s;
}

}  // namespace aclvmm_test
