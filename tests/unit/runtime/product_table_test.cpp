// docs/api-support.md shows the product support matrix exactly as the runtime's table renders it
// (between the support-matrix markers), and the rendering itself is well formed: the header of
// products.md, one line per Feature, cells that agree with Product::supports().
//
// To refresh the doc after changing the table: run this test with ACLVMM_UPDATE_DOCS=1, e.g.
//   ACLVMM_UPDATE_DOCS=1 build/tests/aclvmm_unit_tests --gtest_filter='SupportMatrixDoc.*'
#include "runtime/product_table.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/product.h"
#include "unit/testing/product_families.h"

namespace aclvmm {
namespace {

const std::string kDocPath = std::string(ACLVMM_SOURCE_DIR) + "/docs/api-support.md";
const std::string kBegin = "<!-- support-matrix:begin -->\n";
const std::string kEnd = "<!-- support-matrix:end -->";

bool read_file(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream ss;
  ss << in.rdbuf();
  *out = ss.str();
  return true;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// A line diff (longest common subsequence): "-" lines are in the doc only, "+" lines only in the
// rendering. The tables are a few dozen lines, so the quadratic table is fine.
std::string line_diff(const std::string& doc, const std::string& rendered) {
  const std::vector<std::string> a = lines_of(doc), b = lines_of(rendered);
  std::vector<std::vector<size_t>> lcs(a.size() + 1, std::vector<size_t>(b.size() + 1, 0));
  for (size_t i = a.size(); i-- > 0;) {
    for (size_t j = b.size(); j-- > 0;) {
      lcs[i][j] = a[i] == b[j] ? lcs[i + 1][j + 1] + 1 : std::max(lcs[i + 1][j], lcs[i][j + 1]);
    }
  }
  std::string out;
  size_t i = 0, j = 0;
  while (i < a.size() || j < b.size()) {
    if (i < a.size() && j < b.size() && a[i] == b[j]) {
      out += "  " + a[i++] + "\n";
      ++j;
    } else if (i < a.size() && (j == b.size() || lcs[i + 1][j] >= lcs[i][j + 1])) {
      out += "- " + a[i++] + "\n";
    } else {
      out += "+ " + b[j++] + "\n";
    }
  }
  return out;
}

TEST(SupportMatrixDoc, DocShowsTheRenderedTable) {
  std::string doc;
  ASSERT_TRUE(read_file(kDocPath, &doc)) << "cannot read " << kDocPath;
  const size_t begin = doc.find(kBegin);
  ASSERT_NE(begin, std::string::npos) << kDocPath << " has no line " << kBegin;
  const size_t body = begin + kBegin.size();
  const size_t end = doc.find(kEnd, body);
  ASSERT_NE(end, std::string::npos) << kDocPath << " has no " << kEnd << " after the begin marker";
  EXPECT_EQ(doc.find(kBegin, body), std::string::npos) << "the begin marker appears twice";

  const std::string shown = doc.substr(body, end - body);
  const std::string rendered = render_support_matrix();
  if (shown == rendered) return;

  const char* update = std::getenv("ACLVMM_UPDATE_DOCS");
  if (update && std::string(update) == "1") {
    std::ofstream out(kDocPath, std::ios::binary | std::ios::trunc);
    out << doc.substr(0, body) << rendered << doc.substr(end);
    ASSERT_TRUE(out.good()) << "cannot write " << kDocPath;
    std::cout << "[ UPDATED  ] " << kDocPath << "\n";
    return;
  }
  ADD_FAILURE() << kDocPath << " differs from render_support_matrix() (- doc, + table):\n"
                << line_diff(shown, rendered)
                << "\nRefresh it with ACLVMM_UPDATE_DOCS=1 and this test, or paste between the "
                   "markers:\n"
                << rendered;
}

// ---------------------------------------------------------------------------------------------
// The rendering: products.md's header, a row per Feature in enum order, ✓/✗ as supports() says.

std::vector<std::string> cells_of(const std::string& line) {
  std::vector<std::string> cells;
  if (line.size() < 2 || line.front() != '|' || line.back() != '|') return cells;
  size_t pos = 1;
  for (size_t bar; (bar = line.find(" |", pos)) != std::string::npos; pos = bar + 2) {
    std::string c = line.substr(pos, bar - pos);
    if (!c.empty() && c.front() == ' ') c.erase(0, 1);
    cells.push_back(c);
  }
  return cells;
}

using testing::kFamilySoc;

TEST(SupportMatrixRender, HeaderAndOneLinePerFeature) {
  const std::vector<std::string> lines = lines_of(render_support_matrix());
  ASSERT_EQ(lines.size(), static_cast<size_t>(kFeatureCount) + 2);
  EXPECT_EQ(lines[0], "| API | 950 | A3 | A2 | EDGE | INF | TRAIN |");
  EXPECT_EQ(lines[1], "|---|---|---|---|---|---|---|");
  const std::string text = render_support_matrix();
  EXPECT_EQ(text.back(), '\n');
}

TEST(SupportMatrixRender, CellsAgreeWithSupports) {
  const std::vector<std::string> lines = lines_of(render_support_matrix());
  ASSERT_EQ(lines.size(), static_cast<size_t>(kFeatureCount) + 2);
  for (int f = 0; f < kFeatureCount; ++f) {
    const std::vector<std::string> cells = cells_of(lines[f + 2]);
    ASSERT_EQ(cells.size(), 7u) << lines[f + 2];
    EXPECT_EQ(cells[0], feature_table()[f].governs);
    for (int fam = 0; fam < kFamilyCount; ++fam) {
      auto p = find_product(kFamilySoc[fam]);
      ASSERT_TRUE(p.ok());
      const std::string& c = cells[fam + 1];
      const bool tick = c.rfind("✓", 0) == 0;
      EXPECT_TRUE(tick || c == "✗") << c;
      EXPECT_EQ(tick, p->supports(static_cast<Feature>(f))) << lines[f + 2] << " / " << kFamilySoc[fam];
    }
  }
}

// MemMapSetLink's cells name the links as products.md does; a family without links shows ✗.
TEST(SupportMatrixRender, SetLinkCellsNameTheLinks) {
  const std::vector<std::string> lines = lines_of(render_support_matrix());
  const int row = static_cast<int>(Feature::kSetLink) + 2;
  ASSERT_GT(lines.size(), static_cast<size_t>(row));
  const std::vector<std::string> cells = cells_of(lines[row]);
  ASSERT_EQ(cells.size(), 7u);
  EXPECT_EQ(cells[0], "`aclrtMemMapSetLink`");
  EXPECT_EQ(cells[1], "✓ (UB one-port, UB multi-port only)");  // 950
  EXPECT_EQ(cells[2], "✓ (SIO, HCCS only)");                   // A3
  for (int i = 3; i < 7; ++i) EXPECT_EQ(cells[i], "✗") << i;
}

// Every `aclrt...` name in the table is an exported symbol, and every symbol products.md gates
// by product is named in some row.
TEST(SupportMatrixRender, NamesExactlyTheGatedSymbols) {
  // The subset's names and those of the calls next to it (runtime-extra.md).
  std::set<std::string> symbols;
  for (const char* file : {"/tests/abi/symbols.txt", "/tests/abi/symbols-extra.txt"}) {
    std::string symbols_text;
    const std::string symbols_path = std::string(ACLVMM_SOURCE_DIR) + file;
    ASSERT_TRUE(read_file(symbols_path, &symbols_text)) << symbols_path;
    for (const std::string& line : lines_of(symbols_text)) symbols.insert(line);
  }

  std::set<std::string> named;
  const std::string text = render_support_matrix();
  for (size_t pos = 0; (pos = text.find("`aclrt", pos)) != std::string::npos;) {
    const size_t close = text.find('`', pos + 1);
    ASSERT_NE(close, std::string::npos);
    named.insert(text.substr(pos + 1, close - pos - 1));
    pos = close + 1;
  }
  for (const std::string& n : named) EXPECT_EQ(symbols.count(n), 1u) << n << " is not in symbols.txt";

  const std::set<std::string> gated = {
      "aclrtMemExportToShareableHandleV2", "aclrtMemSetPidToShareableHandleV2",
      "aclrtMemImportFromShareableHandleV2", "aclrtReserveMemAddressNoUCMemory",
      "aclrtMemMapSelectedLink", "aclrtMemMapSetLink", "aclrtMemAllocManaged",
      "aclrtMemManagedAdvise", "aclrtMemManagedGetAttr", "aclrtMemManagedGetAttrs",
      "aclrtMemManagedPrefetchAsync", "aclrtMemManagedPrefetchBatchAsync", "aclrtMemP2PMap",
      "aclrtReserveMemAddress", "aclrtMallocPhysical", "aclrtMemMapNoAccess", "aclrtStreamAbort",
      "aclrtCreateStreamWithConfig", "aclrtValueWrite", "aclrtValueWait", "aclrtMemcpyBatch",
      "aclrtMemcpyBatchAsync", "aclrtHostRegister", "aclrtHostRegisterV2",
      "aclrtHostGetDevicePointer", "aclrtHostUnregister", "aclrtIpcMemGetExportKey",
      "aclrtIpcMemSetImportPid", "aclrtIpcMemImportByKey", "aclrtIpcMemClose",
      "aclrtIpcMemSetAttr", "aclrtIpcMemImportPidInterServer"};
  for (const std::string& g : gated) EXPECT_EQ(named.count(g), 1u) << g << " is gated but not in the table";
}

TEST(SupportMatrixDiff, MarksChangedLines) {
  EXPECT_EQ(line_diff("a\nb\nc\n", "a\nx\nc\n"), "  a\n- b\n+ x\n  c\n");
  EXPECT_EQ(line_diff("a\n", "a\nb\n"), "  a\n+ b\n");
  EXPECT_EQ(line_diff("a\nb\n", "b\n"), "- a\n  b\n");
}

}  // namespace
}  // namespace aclvmm
