//===- ReportFormat.cpp - Markdown and JSON renderings --------------------===//

#include "ReportFormat.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/JSON.h"

using namespace mlir;
using namespace mlir::stage;
using namespace mlir::stage::report;

std::string mlir::stage::report::exactValue(const sym::Rational &v) {
  if (v.isInteger())
    return sym::toString(v.numerator());
  std::string s;
  llvm::raw_string_ostream(s) << llvm::format("%.6g", v.toDouble());
  return s;
}

std::string mlir::stage::report::humanReadable(const sym::Rational &v) {
  static const char *const prefixes[] = {"", "k", "M", "G", "T", "P", "E", "Z", "Y"};
  double d = v.toDouble();
  unsigned i = 0;
  while (std::abs(d) >= 1000.0 && i + 1 < std::size(prefixes)) {
    d /= 1000.0;
    ++i;
  }
  std::string s;
  llvm::raw_string_ostream os(s);
  if (i == 0 && v.isInteger())
    os << exactValue(v);
  else
    os << llvm::format("%.3f", d) << " " << prefixes[i];
  return s;
}

void mlir::stage::report::printMarkdown(const Report &report,
                                        llvm::raw_ostream &os) {
  for (const FunctionReport &f : report.functions) {
    os << "# stage report: @" << f.name << "\n";
    for (const Section &s : f.sections) {
      os << "\n## " << s.title << "\n\n";
      os << "| quantity | symbolic | value | |\n";
      os << "|---|---|---:|---:|\n";
      for (const Quantity &q : s.rows)
        os << "| " << q.label << " | `" << q.expr.str() << "` | "
           << exactValue(q.value) << " | " << humanReadable(q.value) << q.unit
           << " |\n";
    }
    os << "\n";
  }
  os << "Bindings: ";
  bool first = true;
  for (const auto &[k, v] : report.bindings) {
    os << (first ? "" : ", ") << k << "=" << v;
    first = false;
  }
  os << "\n";
}

/// Integers of any size are written exactly; JSON does not bound them.
static void writeNumber(llvm::json::OStream &j, const sym::Rational &v) {
  if (v.isInteger())
    j.rawValue(sym::toString(v.numerator()));
  else
    j.value(v.toDouble());
}

void mlir::stage::report::printJson(const Report &report,
                                    llvm::raw_ostream &os) {
  llvm::json::OStream j(os, 2);
  j.object([&] {
    j.attributeObject("bindings", [&] {
      for (const auto &[k, v] : report.bindings)
        j.attribute(k, v);
    });
    j.attributeArray("functions", [&] {
      for (const FunctionReport &f : report.functions)
        j.object([&] {
          j.attribute("name", f.name);
          for (const Section &s : f.sections)
            j.attributeObject(s.key, [&] {
              for (const Quantity &q : s.rows)
                j.attributeObject(q.key, [&] {
                  j.attribute("expr", q.expr.str());
                  j.attributeBegin("value");
                  writeNumber(j, q.value);
                  j.attributeEnd();
                  j.attribute("unit", q.unit);
                });
            });
        });
    });
  });
  os << "\n";
}
