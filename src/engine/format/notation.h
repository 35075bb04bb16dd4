// How a call's values and arguments are written and read back: the value notation (JSON, or a
// model's own), and the argument syntax (a JSON object, tagged members, keywords).
#pragma once

#include <optional>
#include <string>

#include "schemaweaver/tools.h"

namespace sw {

// How a value is written where it is not raw: as JSON, or in Gemma 4's notation - a string raw
// between two of the model's own quotes (<|"|>), an object's keys bare, no spaces:
// {city:<|"|>Paris<|"|>,days:3,tags:[<|"|>a<|"|>,<|"|>b<|"|>]}. Numbers, true, false and null as JSON.
struct ValueNotation {
  std::string string_quote;  // "": JSON
  bool json() const { return string_quote.empty(); }
  std::string item_separator() const { return json() ? ", " : ","; }
  // The value's text. Throws Error for a string that holds the quote (it cannot be written).
  std::string text(const Json& value) const;
  // One past the end of the value that begins at `begin`; npos if there is none complete.
  size_t value_end(const std::string& text, size_t begin) const;
  // The value written as `text`, whole; nullopt if it is not one value in the notation.
  std::optional<Json> read(const std::string& text) const;
};

// How a call writes its arguments: as one JSON object's members ({"city": "Paris", "days": 3});
// tagged - each argument between markers of its own, a string's value raw, as it is, ended by
// the value's end marker (<parameter=city>\nParis\n</parameter>\n<parameter=days>\n3\n</parameter>\n);
// or as keywords - NAME=VALUE, the value JSON, the name an identifier, as a python-like call
// writes them (get_weather(city="Paris", days=3), LFM2).
// Every way the members are  open MEMBER (separator MEMBER)* close, a member  key_text(NAME) VALUE
// value_suffix, in the reference order (call_grammar.h).
struct ArgumentSyntax {
  bool tagged = false;
  bool keywords = false;
  ValueNotation notation;  // of the values that are not raw (keywords: Gemma 4's calls are keywords in its notation)
  std::string open = "{", close = "}";
  std::string name_prefix, name_suffix;  // tagged, keywords: around an argument's name (tagged: the value's prefix included)
  std::string value_suffix;              // tagged: after each value; never empty (it ends a raw value)
  std::string separator = ", ";

  // Whether the members are written by the fields above, not as one JSON object.
  bool named_members() const { return tagged || keywords; }
  // The text before an argument's value: '"city": ', '<parameter=city>\n' or 'city='. Throws Error
  // for a name the syntax cannot write (a keyword that is not an identifier).
  std::string key_text(const std::string& name) const;
  // The text before an argument's name: '"', '<parameter=' or ''.
  std::string key_opening() const { return named_members() ? name_prefix : "\""; }
  // The syntax of the objects inside values: JSON's, or the notation's (bare keys).
  ArgumentSyntax nested() const;
  // Whether a value of this schema is written raw: tagged, and the schema's value a string, as
  // llama.cpp's parser reads it (a schema that may be a string or another kind is refused).
  bool raw(const Schema& schema) const;
  // The value of one argument from its text (value_suffix included where tagged); nullopt if the
  // text is not such a value (JSON that does not parse, or bytes that are not UTF-8).
  std::optional<Json> read_value(const std::string& text, const Schema* schema) const;
  // The members' text of these arguments, as a template writes them.
  std::string members_text(const Json& arguments) const;
};

// One past the end of the JSON value that begins at `begin` in `text`: an object's or array's
// closing bracket (strings and their escapes skipped), a string's closing quote, a number's or
// literal's last character; npos if the text ends first or holds no value there.
size_t json_value_end(const std::string& text, size_t begin);

}  // namespace sw
