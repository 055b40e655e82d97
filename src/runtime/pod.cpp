#include "runtime/pod.h"

#include <arpa/inet.h>

#include <cctype>
#include <set>
#include <sstream>

namespace aclvmm {
namespace {

Status bad_line(int line, const std::string& text, const std::string& why) {
  return Error(kAclInvalidParam,
               "ACLVMM_POD_FILE line " + std::to_string(line) + " (\"" + text + "\"): " + why);
}

bool numeric_address(const std::string& text, bool v6) {
  unsigned char buf[16];
  return ::inet_pton(v6 ? AF_INET6 : AF_INET, text.c_str(), buf) == 1;
}

// "addr", "addr:port", "[v6]" or "[v6]:port" into address and port; false when malformed.
bool split_address(const std::string& text, std::string* address, uint16_t* port) {
  std::string host = text;
  std::string port_text;
  bool v6 = false;
  if (!text.empty() && text[0] == '[') {
    const size_t close = text.find(']');
    if (close == std::string::npos) return false;
    host = text.substr(1, close - 1);
    const std::string rest = text.substr(close + 1);
    if (!rest.empty()) {
      if (rest[0] != ':') return false;
      port_text = rest.substr(1);
      if (port_text.empty()) return false;
    }
    v6 = true;
  } else if (const size_t colon = text.find(':'); colon != std::string::npos) {
    if (text.find(':', colon + 1) != std::string::npos) {
      v6 = true;  // a bare IPv6 address: no port
    } else {
      host = text.substr(0, colon);
      port_text = text.substr(colon + 1);
      if (port_text.empty()) return false;
    }
  }
  if (!numeric_address(host, v6)) return false;
  if (!port_text.empty()) {
    if (port_text.size() > 5) return false;
    unsigned long value = 0;
    for (char c : port_text) {
      if (!std::isdigit(static_cast<unsigned char>(c))) return false;
      value = value * 10 + static_cast<unsigned long>(c - '0');
    }
    if (value == 0 || value > 65535) return false;
    *port = static_cast<uint16_t>(value);
  }
  *address = host;
  return true;
}

}  // namespace

StatusOr<std::vector<PodMember>> parse_pod(const std::string& text, int own_server) {
  std::vector<PodMember> members;
  std::set<int> seen;
  std::istringstream lines(text);
  std::string raw;
  int number = 0;
  while (std::getline(lines, raw)) {
    ++number;
    std::string line = raw.substr(0, raw.find('#'));
    std::istringstream words(line);
    std::string id_text, address_text, extra;
    if (!(words >> id_text)) continue;  // blank or comment only
    if (!(words >> address_text)) return bad_line(number, raw, "expected `server_id address`");
    if (words >> extra) {
      return bad_line(number, raw, "unexpected \"" + extra + "\" after the address");
    }
    if (id_text.size() > 4 || id_text.find_first_not_of("0123456789") != std::string::npos ||
        std::stoi(id_text) > kMaxServerId) {
      return bad_line(number, raw, "the server id must be 0..1022");
    }
    PodMember m;
    m.server_id = std::stoi(id_text);
    if (!split_address(address_text, &m.address, &m.port)) {
      return bad_line(number, raw,
                      "the address must be a numeric IPv4 or IPv6 address with an optional port "
                      "(1..65535): a.b.c.d, a.b.c.d:port, v6, [v6]:port");
    }
    if (!seen.insert(m.server_id).second) {
      return bad_line(number, raw, "server " + id_text + " is listed twice");
    }
    members.push_back(std::move(m));
  }
  if (seen.count(own_server) == 0) {
    return Error(kAclInvalidParam, "ACLVMM_POD_FILE lists no line for this process's server " +
                                       std::to_string(own_server) + " (ACLVMM_SERVER_ID)");
  }
  return members;
}

}  // namespace aclvmm
