// Unit tests of the aclInit configuration check: one JSON object, nested at most 10 levels of
// '{' and '[' (CANN's limit, conventions.md 3.1).
#include <gtest/gtest.h>

#include <string>

#include "base/json_check.h"

namespace aclvmm {
namespace {

// `depth` levels of objects: {"a":{"a":{}}} is depth 3.
std::string nested_objects(int depth) {
  std::string s;
  for (int i = 1; i < depth; ++i) s += "{\"a\":";
  s += "{}";
  for (int i = 1; i < depth; ++i) s += "}";
  return s;
}

// One object holding depth-1 levels of arrays: {"a":[[...]]} is depth `depth`.
std::string object_with_arrays(int depth) {
  std::string s = "{\"a\":";
  for (int i = 1; i < depth; ++i) s += "[";
  s += "1";
  for (int i = 1; i < depth; ++i) s += "]";
  return s + "}";
}

struct JsonCase {
  const char* name;
  std::string text;
  bool valid;
};

class JsonConfigValid : public ::testing::TestWithParam<JsonCase> {};

TEST_P(JsonConfigValid, Table) {
  const JsonCase& c = GetParam();
  std::string why = "untouched";
  EXPECT_EQ(json_config_valid(c.text, &why), c.valid) << c.name << ": " << c.text;
  if (!c.valid) {
    EXPECT_NE(why, "untouched") << c.name;
    EXPECT_FALSE(why.empty()) << c.name;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Valid, JsonConfigValid,
    ::testing::Values(
        JsonCase{"empty_object", "{}", true},
        JsonCase{"whitespace_around", " \n\t{ } \r\n", true},
        JsonCase{"flat", R"({"err_msg_mode":"1","max_opqueue_num":"16"})", true},
        JsonCase{"literals", R"({"a":true,"b":false,"c":null})", true},
        JsonCase{"numbers", R"({"a":0,"b":-12,"c":3.5,"d":1e10,"e":-2.5E-3})", true},
        JsonCase{"typical", R"({"dump":{"dump_path":"/tmp/d","dump_list":[{"model_name":"m"}]},)"
                            R"("defaultDevice":{"default_device":"0"}})", true},
        JsonCase{"arrays", R"({"a":[],"b":[1,2,3],"c":[[1],[2,[3]]],"d":[{"x":1},{}]})", true},
        JsonCase{"escapes", R"({"s":"quote \" backslash \\ slash \/ nl \n tab \t u \u00e9"})", true},
        JsonCase{"escaped_quote_at_end", R"({"s":"\""})", true},
        JsonCase{"escaped_backslash_at_end", R"({"s":"\\"})", true},
        JsonCase{"braces_inside_strings", R"({"s":"{[{[{[{[{[{[{[","t":"}]"})", true},
        JsonCase{"empty_key_and_value", R"({"":""})", true},
        JsonCase{"utf8", "{\"name\":\"\xe6\x98\x87\xe8\x85\xbe\"}", true},
        JsonCase{"spaces_everywhere", "{ \"a\" : [ 1 , 2 ] , \"b\" : { } }", true},
        JsonCase{"depth_10_objects", nested_objects(10), true},
        JsonCase{"depth_10_arrays", object_with_arrays(10), true},
        JsonCase{"depth_10_mixed", R"({"a":[{"b":[{"c":[{"d":[{"e":[]}]}]}]}]})", true}),
    [](const ::testing::TestParamInfo<JsonCase>& info) { return std::string(info.param.name); });

INSTANTIATE_TEST_SUITE_P(
    Invalid, JsonConfigValid,
    ::testing::Values(
        JsonCase{"empty_string", "", false},
        JsonCase{"only_whitespace", "  \n ", false},
        JsonCase{"top_level_array", "[]", false},
        JsonCase{"top_level_array_of_object", "[{}]", false},
        JsonCase{"top_level_string", "\"x\"", false},
        JsonCase{"top_level_number", "1", false},
        JsonCase{"top_level_null", "null", false},
        JsonCase{"depth_11_objects", nested_objects(11), false},
        JsonCase{"depth_11_arrays", object_with_arrays(11), false},
        JsonCase{"depth_11_mixed", R"({"a":[{"b":[{"c":[{"d":[{"e":[[]]}]}]}]}]})", false},
        JsonCase{"depth_50", nested_objects(50), false},
        JsonCase{"trailing_garbage", "{}x", false},
        JsonCase{"trailing_second_object", "{}{}", false},
        JsonCase{"trailing_comma_text", "{} ,", false},
        JsonCase{"unclosed_object", "{", false},
        JsonCase{"unclosed_nested", R"({"a":{"b":1})", false},
        JsonCase{"unclosed_array", R"({"a":[1,2})", false},
        JsonCase{"mismatched_close", R"({"a":[1}})", false},
        JsonCase{"missing_colon", R"({"a" 1})", false},
        JsonCase{"missing_value", R"({"a":})", false},
        JsonCase{"unquoted_key", R"({a:1})", false},
        JsonCase{"single_quotes", R"({'a':1})", false},
        JsonCase{"missing_comma", R"({"a":1 "b":2})", false},
        JsonCase{"unterminated_string", R"({"a":"abc})", false},
        JsonCase{"unterminated_after_escape", "{\"a\":\"abc\\", false},
        JsonCase{"raw_newline_in_string", "{\"a\":\"line\nbreak\"}", false},
        JsonCase{"bad_literal", R"({"a":tru})", false},
        JsonCase{"capital_literal", R"({"a":True})", false},
        JsonCase{"bare_word", R"({"a":abc})", false}),
    [](const ::testing::TestParamInfo<JsonCase>& info) { return std::string(info.param.name); });

TEST(JsonConfigValid, ExactNestingBoundary) {
  std::string why;
  for (int depth = 1; depth <= 10; ++depth) {
    EXPECT_TRUE(json_config_valid(nested_objects(depth), &why)) << depth << ": " << why;
    EXPECT_TRUE(json_config_valid(object_with_arrays(depth), &why)) << depth << ": " << why;
  }
  for (int depth = 11; depth <= 13; ++depth) {
    EXPECT_FALSE(json_config_valid(nested_objects(depth), &why)) << depth;
    EXPECT_FALSE(json_config_valid(object_with_arrays(depth), &why)) << depth;
  }
}

// Depth counts nesting, not the number of objects: many siblings at depth 10 are fine.
TEST(JsonConfigValid, SiblingsDoNotAddDepth) {
  std::string inner = nested_objects(9);
  std::string text = "{\"a\":" + inner + ",\"b\":" + inner + ",\"c\":[" + inner + "]}";
  // "c" holds an array (depth 2) of a depth-9 object: depth 11.
  std::string why;
  EXPECT_FALSE(json_config_valid(text, &why));
  text = "{\"a\":" + inner + ",\"b\":" + inner + ",\"c\":" + inner + "}";
  EXPECT_TRUE(json_config_valid(text, &why)) << why;
}

}  // namespace
}  // namespace aclvmm
