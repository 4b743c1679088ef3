// How a row type is written to and read from its table. Each row type declares
// its columns once (storage/columns.h: a Table<Row> specialisation, name plus
// an ordered list of Column<Row>); that one list drives the SELECT list, the
// INSERT column list and placeholders, the UPDATE list, binding and reading, so
// nothing is kept in step by position in several places.
//
// Reading is strict: a stored value that does not parse (an enum name this
// soakd does not know, metrics JSON that does not read) makes the query fail
// with "<table> row <id>: column <name>: <what is wrong>", never a default.
// Internal to soak_storage.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "core/types.h"
#include "storage/sqlite_stmt.h"

namespace soak {

// What a column takes part in.
enum class ColumnUse {
  RowId,      // the primary key: read, never inserted (SQLite assigns it); first in every table
  Stored,     // written by insert, read back
  Mutable,    // written by insert, read back, and rewritten by the row's update
  WriteOnly,  // written by insert, never read (derived from other fields, kept for plain-SQL readers)
  ReadOnly,   // read back; written by a dedicated update, never by insert
};

template <class Row>
struct Column {
  std::string_view name;
  ColumnUse use;
  void (*bind)(Stmt&, const Row&);  // binds this column's value as the next placeholder
  // Reads result column `c` into the row; returns what is wrong with the stored value, if anything.
  std::optional<std::string> (*read)(const Stmt&, int c, Row&);
  // What a summary query (`status()`) selects in place of this column, e.g. '[]'
  // for a large JSON document it does not need; empty: the column itself.
  std::string_view summary_sql = {};
  // The column's value as JSON, for a row shown whole (storage/row_json.h);
  // null: a document of its own, none given.
  void (*json)(nlohmann::ordered_json& out, const Row&) = nullptr;

  constexpr bool selected() const { return use != ColumnUse::WriteOnly; }
  constexpr bool inserted() const { return use != ColumnUse::RowId && use != ColumnUse::ReadOnly; }
};

// Specialised once per row type in storage/columns.h:
//   static constexpr std::string_view name;          the table
//   static constexpr Column<Row> columns[];           RowId first
template <class Row>
struct Table;

// ---- stored enums: by name, parsed strictly ----------------------------------
// Specialised in storage/columns.h for every enum stored in a column.
template <class E>
struct Vocabulary;

// ---- one field <-> one result column ----------------------------------------
inline std::optional<std::string> read_field(const Stmt& s, int c, int64_t& v) {
  v = s.i64(c);
  return std::nullopt;
}
inline std::optional<std::string> read_field(const Stmt& s, int c, int& v) {
  v = static_cast<int>(s.i64(c));
  return std::nullopt;
}
inline std::optional<std::string> read_field(const Stmt& s, int c, bool& v) {
  v = s.i64(c) != 0;
  return std::nullopt;
}
inline std::optional<std::string> read_field(const Stmt& s, int c, double& v) {
  v = s.dbl(c);
  return std::nullopt;
}
// Text is read in place (no copy of SQLite's buffer but into the field): a
// judgment reads tens of thousands of rows of a dozen text columns each.
inline std::optional<std::string> read_field(const Stmt& s, int c, std::string& v) {
  v.assign(s.text_view(c));
  return std::nullopt;
}
template <class E>
requires std::is_enum_v<E> std::optional<std::string> read_field(const Stmt& s, int c, E& v) {
  const std::string_view stored = s.text_view(c);
  auto parsed = Vocabulary<E>::parse(stored);
  if (!parsed) return "\"" + std::string(stored) + "\" is not one of " + Vocabulary<E>::names();
  v = *parsed;
  return std::nullopt;
}
template <class T>
std::optional<std::string> read_field(const Stmt& s, int c, std::optional<T>& v) {
  if (s.null(c)) {
    v.reset();
    return std::nullopt;
  }
  T t{};
  auto problem = read_field(s, c, t);
  if (!problem) v = std::move(t);
  return problem;
}

// ---- a column bound straight to a data member --------------------------------
template <class M>
struct MemberPointer;
template <class R, class F>
struct MemberPointer<F R::*> {
  using Row = R;
};
template <auto M>
using RowOf = typename MemberPointer<decltype(M)>::Row;

template <auto M>
void bind_member(Stmt& s, const RowOf<M>& r) {
  s.bind(r.*M);
}
template <auto M>
std::optional<std::string> read_member(const Stmt& s, int c, RowOf<M>& r) {
  return read_field(s, c, r.*M);
}

// A field as JSON: numbers and text as they are, an enum by its stored name,
// an empty optional as null; anything else (a nested document) null.
template <class T>
struct IsOptional : std::false_type {};
template <class T>
struct IsOptional<std::optional<T>> : std::true_type {};
template <class T>
void field_json(nlohmann::ordered_json& out, const T& v) {
  if constexpr (IsOptional<T>::value) {
    if (v)
      field_json(out, *v);
    else
      out = nullptr;
  } else if constexpr (std::is_enum_v<T>) {
    out = std::string(to_string(v));
  } else if constexpr (std::is_arithmetic_v<T> || std::is_same_v<T, std::string>) {
    out = v;
  } else {
    out = nullptr;
  }
}
template <auto M>
void json_member(nlohmann::ordered_json& out, const RowOf<M>& r) {
  field_json(out, r.*M);
}

// A text member holding a JSON document of its own: shown as that document
// where it parses, else as its text.
template <auto M>
void json_document(nlohmann::ordered_json& out, const RowOf<M>& r) {
  out = nlohmann::ordered_json::parse(r.*M, nullptr, false);
  if (out.is_discarded()) out = r.*M;
}

// col<&Row::member>("column_name"): the member is stored as it is.
template <auto M>
constexpr Column<RowOf<M>> col(std::string_view name, ColumnUse use = ColumnUse::Stored) {
  return {name, use, &bind_member<M>, &read_member<M>, {}, &json_member<M>};
}
// doc<&Row::member>("column_name"): stored as text, a JSON document (shown as one).
template <auto M>
constexpr Column<RowOf<M>> doc(std::string_view name, ColumnUse use = ColumnUse::Stored) {
  return {name, use, &bind_member<M>, &read_member<M>, {}, &json_document<M>};
}

// ---- SQL generated from the declarations -------------------------------------
enum class Selection { Full, Summary };

// "a, b, c" (each prefixed by `alias`, e.g. "v."); Summary puts a column's
// summary_sql in its place where it has one.
template <class Row>
std::string select_list(std::string_view alias = {}, Selection selection = Selection::Full) {
  std::string out;
  for (const Column<Row>& c : Table<Row>::columns) {
    if (!c.selected()) continue;
    if (!out.empty()) out += ", ";
    if (selection == Selection::Summary && !c.summary_sql.empty())
      out += c.summary_sql;
    else
      out.append(alias).append(c.name);
  }
  return out;
}

template <class Row>
constexpr int selected_count() {
  int n = 0;
  for (const Column<Row>& c : Table<Row>::columns) n += c.selected() ? 1 : 0;
  return n;
}

// The statements for a row type, built once from its declaration.
struct TableSql {
  std::string select;  // "SELECT <list> FROM <table>"
  std::string insert;  // "INSERT INTO <table> (<inserted>) VALUES (?, ...)"
  std::string update;  // "UPDATE <table> SET <mutable> = ?, ... WHERE id = ?"; empty without Mutable columns
};

template <class Row>
const TableSql& sql_of() {
  static const TableSql sql = [] {
    TableSql t;
    const std::string table(Table<Row>::name);
    t.select = "SELECT " + select_list<Row>() + " FROM " + table;
    std::string names, marks, sets;
    for (const Column<Row>& c : Table<Row>::columns) {
      if (c.inserted()) {
        names.append(names.empty() ? "" : ", ").append(c.name);
        marks.append(marks.empty() ? "?" : ", ?");
      }
      if (c.use == ColumnUse::Mutable) sets.append(sets.empty() ? "" : ", ").append(c.name).append(" = ?");
    }
    t.insert = "INSERT INTO " + table + " (" + names + ") VALUES (" + marks + ")";
    if (!sets.empty())
      t.update = "UPDATE " + table + " SET " + sets + " WHERE " + std::string(Table<Row>::columns[0].name) + " = ?";
    return t;
  }();
  return sql;
}

// ---- binding and reading whole rows ------------------------------------------
template <class Row>
void bind_insert(Stmt& s, const Row& r) {
  for (const Column<Row>& c : Table<Row>::columns)
    if (c.inserted()) c.bind(s, r);
}

// The Mutable columns, then the row id (the WHERE of sql_of<Row>().update).
template <class Row>
void bind_update(Stmt& s, const Row& r) {
  for (const Column<Row>& c : Table<Row>::columns)
    if (c.use == ColumnUse::Mutable) c.bind(s, r);
  Table<Row>::columns[0].bind(s, r);
}

// Reads the row whose select list starts at result column `first`.
template <class Row>
Result<Row> read_row(const Stmt& s, int first = 0) {
  static_assert(Table<Row>::columns[0].use == ColumnUse::RowId, "the row id comes first");
  Row r;
  int at = first;
  for (const Column<Row>& c : Table<Row>::columns) {
    if (!c.selected()) continue;
    if (auto problem = c.read(s, at, r))
      return make_error(std::string(Table<Row>::name) + " row " + std::to_string(s.i64(first)) + ": column " +
                        std::string(c.name) + ": " + *problem);
    ++at;
  }
  return r;
}

// ---- whole statements --------------------------------------------------------
template <class Row>
Result<int64_t> insert_row(StmtCache* cache, sqlite3* db, const Row& r) {
  Stmt s(cache, db, sql_of<Row>().insert);
  if (s.ok()) bind_insert(s, r);
  return run_insert(db, s, Table<Row>::name);
}

// Rewrites the Mutable columns of the row with r's id.
template <class Row>
Status update_row(StmtCache* cache, sqlite3* db, const Row& r) {
  Stmt s(cache, db, sql_of<Row>().update);
  if (s.ok()) bind_update(s, r);
  return run_update(db, s, Table<Row>::name);
}

// SELECT <columns> FROM <table> <where> <tail>, e.g. tail " ORDER BY id" (or,
// with an empty Where, a fixed " WHERE ..." of its own). `expected`: an upper
// bound of the rows when the caller knows one cheaply, so that the vector is
// sized once rather than regrown by doubling (for a week of probe rows, twice
// the memory touched: most of the time of a whole `soakctl explain`).
template <class Row>
Result<std::vector<Row>> select_rows(StmtCache* cache, sqlite3* db, const Where& w, std::string_view tail,
                                     size_t expected = 0) {
  std::string sql = sql_of<Row>().select + w.sql();
  sql.append(tail);
  return select_all<Row>(
      cache, db, sql, w, [](const Stmt& s) { return read_row<Row>(s); }, expected);
}

}  // namespace soak
