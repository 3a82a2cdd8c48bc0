"""A JSON Schema 2020-12 validator for the keywords fsjob's schemas use.

The schemas of ``schemas/`` are normative for field names, types and bounds
(REC-5); this module interprets them (vendored in ``_schemas.py``) instead
of transcribing them, so the two cannot drift. It implements what those
documents use: type, const, enum, properties, patternProperties,
additionalProperties, required, maxProperties, propertyNames, items,
prefixItems, minItems, maxItems, uniqueItems, minimum, maximum, minLength,
maxLength, pattern, $ref, allOf, anyOf, oneOf, not, if/then/else and
unevaluatedProperties (with the annotations of 2020-12: only subschemas that
pass mark members as evaluated), plus fsjob's own maxBytes (UTF-8 bytes of a
string), maxJsonBytes (bytes of the compact serialization) and nonUtf8Base64
(the base64 form of bytes that are not UTF-8, SPEC-3). A keyword it
does not know makes :func:`check_schema_support` fail, and a test runs that
over every vendored document.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, NamedTuple, Optional, Pattern, Set, Tuple, Union

from .bytesform import non_utf8_base64_problem
from .jsontext import compact_size, dumps_compact, json_pointer

Schema = Dict[str, Any]

#: Keywords that only annotate for people.
_IGNORED = frozenset(("$schema", "$id", "$comment", "title", "description", "$defs", "examples", "default"))
_KNOWN = frozenset((
    "type", "const", "enum", "properties", "patternProperties", "additionalProperties", "required",
    "maxProperties", "minProperties", "propertyNames", "items", "prefixItems", "minItems", "maxItems",
    "uniqueItems", "minimum", "maximum", "minLength", "maxLength", "pattern", "$ref", "allOf", "anyOf",
    "oneOf", "not", "if", "then", "else", "unevaluatedProperties", "maxBytes", "maxJsonBytes", "nonUtf8Base64",
)) | _IGNORED


class SchemaError(NamedTuple):
    """One failed keyword: where in the instance, which keyword, what."""

    pointer: str
    keyword: str
    message: str
    #: For unevaluatedProperties: the member that no subschema defines.
    member: Optional[str] = None


class _Result:
    __slots__ = ("valid", "errors", "evaluated", "defined")

    def __init__(self) -> None:
        self.valid = True
        self.errors: List[SchemaError] = []
        #: Members marked evaluated by passing (sub)schemas (2020-12 annotations).
        self.evaluated: Set[str] = set()
        #: Members some in-place subschema defines, passing or not (to tell an
        #: unknown member from a defined one whose subschema failed).
        self.defined: Set[str] = set()

    def fail(self, pointer: str, keyword: str, message: str, member: Optional[str] = None) -> None:
        self.valid = False
        self.errors.append(SchemaError(pointer, keyword, message, member))

    def member(self, name: str, inner: "_Result") -> None:
        """Take a member subschema's result: the member is evaluated when it passed, else its errors are ours."""
        if inner.valid:
            self.evaluated.add(name)
        else:
            self.valid = False
            self.errors.extend(inner.errors)


_PATTERNS: Dict[str, Pattern[str]] = {}


def _ecma_pattern(source: str) -> Pattern[str]:
    """Compile an ECMA-262 pattern of the schemas: an unescaped ``$`` means end of text (Python's ``$`` also matches before a final line feed)."""
    compiled = _PATTERNS.get(source)
    if compiled is not None:
        return compiled
    out: List[str] = []
    i = 0
    in_class = False
    while i < len(source):
        c = source[i]
        if c == "\\" and i + 1 < len(source):
            out.append(source[i:i + 2])
            i += 2
            continue
        if c == "[":
            in_class = True
        elif c == "]":
            in_class = False
        elif c == "$" and not in_class:
            out.append(r"\Z")
            i += 1
            continue
        out.append(c)
        i += 1
    compiled = re.compile("".join(out))
    _PATTERNS[source] = compiled
    return compiled


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "integer" if value.is_integer() else "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return "unknown"


def _type_matches(value: Any, wanted: str) -> bool:
    actual = _json_type(value)
    return actual == wanted or (wanted == "number" and actual == "integer")


def _canonical(value: Any) -> str:
    """Equality of JSON values (const, enum, uniqueItems): 1 and 1.0 are equal, true and 1 are not."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return dumps_compact(value)
    if isinstance(value, (int, float)):
        return "n" + repr(float(value)) if isinstance(value, float) and not value.is_integer() else "n" + str(int(value))
    if isinstance(value, list):
        return "[" + ",".join(_canonical(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(dumps_compact(key) + ":" + _canonical(value[key]) for key in sorted(value)) + "}"
    return repr(value)


class Validator:
    """Validates instances against a set of schema documents keyed by file name."""

    def __init__(self, documents: Dict[str, Schema]) -> None:
        self.documents = documents

    def resolve(self, ref: str, base: str) -> Tuple[Schema, str]:
        name, _, fragment = ref.partition("#")
        document_name = name or base
        if "/" in document_name:
            document_name = document_name.rsplit("/", 1)[1]
        document = self.documents.get(document_name)
        if document is None:
            raise KeyError(f"unknown schema document {document_name!r} in $ref {ref!r}")
        node: Any = document
        for part in (p for p in fragment.split("/") if p != ""):
            part = part.replace("~1", "/").replace("~0", "~")
            node = node[part]
        if not isinstance(node, dict):
            raise KeyError(f"$ref {ref!r} does not name a schema")
        return node, document_name

    def validate(self, document_name: str, instance: Any) -> List[SchemaError]:
        """Every error of ``instance`` against the named document (empty when valid)."""
        result = self._apply(self.documents[document_name], document_name, instance, [])
        return result.errors

    def _apply(self, schema: Union[Schema, bool], base: str, value: Any, path: List[Union[str, int]]) -> _Result:
        result = _Result()
        if schema is True:
            return result
        if schema is False:
            result.fail(json_pointer(path), "false", "is not allowed")
            return result
        assert isinstance(schema, dict)
        pointer = json_pointer(path)
        is_object = isinstance(value, dict)

        def inplace(sub: Union[Schema, bool], sub_base: str = base) -> _Result:
            inner = self._apply(sub, sub_base, value, path)
            result.defined |= inner.defined
            return inner

        def absorb(inner: _Result) -> None:
            if inner.valid:
                result.evaluated |= inner.evaluated
            else:
                result.valid = False
                result.errors.extend(inner.errors)

        if "$ref" in schema:
            target, target_base = self.resolve(schema["$ref"], base)
            absorb(inplace(target, target_base))
        wanted = schema.get("type")
        if wanted is not None:
            options = wanted if isinstance(wanted, list) else [wanted]
            if not any(_type_matches(value, option) for option in options):
                result.fail(pointer, "type", f"must be {' or '.join(options)}")
                return result
        if "const" in schema and _canonical(value) != _canonical(schema["const"]):
            result.fail(pointer, "const", f"must be {dumps_compact(schema['const'])}")
        if "enum" in schema and _canonical(value) not in {_canonical(option) for option in schema["enum"]}:
            result.fail(pointer, "enum", "must be one of " + ", ".join(dumps_compact(option) for option in schema["enum"]))
        self._scalar_keywords(schema, value, pointer, result)
        if is_object:
            self._object_keywords(schema, base, value, path, result)
        if isinstance(value, list):
            self._array_keywords(schema, base, value, path, result)
        for sub in schema.get("allOf", ()):
            absorb(inplace(sub))
        if "anyOf" in schema:
            passing = [inner for inner in (inplace(sub) for sub in schema["anyOf"]) if inner.valid]
            if not passing:
                result.fail(pointer, "anyOf", "must match one of the alternatives")
            for inner in passing:
                result.evaluated |= inner.evaluated
        if "oneOf" in schema:
            passing = [inner for inner in (inplace(sub) for sub in schema["oneOf"]) if inner.valid]
            if len(passing) != 1:
                result.fail(pointer, "oneOf", "must match exactly one of the alternatives" if passing else "must match one of the alternatives")
            else:
                result.evaluated |= passing[0].evaluated
        if "not" in schema and inplace(schema["not"]).valid:
            result.fail(pointer, "not", "must not match the excluded form")
        if "if" in schema:
            condition = inplace(schema["if"])
            if condition.valid:
                result.evaluated |= condition.evaluated
                if "then" in schema:
                    absorb(inplace(schema["then"]))
            elif "else" in schema:
                absorb(inplace(schema["else"]))
        if is_object and "unevaluatedProperties" in schema:
            self._unevaluated(schema, base, value, path, result)
        return result

    def _scalar_keywords(self, schema: Schema, value: Any, pointer: str, result: _Result) -> None:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            if "minimum" in schema and value < schema["minimum"]:
                result.fail(pointer, "minimum", f"must be >= {schema['minimum']}")
            if "maximum" in schema and value > schema["maximum"]:
                result.fail(pointer, "maximum", f"must be <= {schema['maximum']}")
        if isinstance(value, str):
            if "minLength" in schema and len(value) < schema["minLength"]:
                result.fail(pointer, "minLength", f"must have at least {schema['minLength']} characters")
            if "maxLength" in schema and len(value) > schema["maxLength"]:
                result.fail(pointer, "maxLength", f"must have at most {schema['maxLength']} characters")
            if "maxBytes" in schema:
                size = len(value.encode("utf-8", "surrogatepass"))
                if size > schema["maxBytes"]:
                    result.fail(pointer, "maxBytes", f"is {size} bytes of UTF-8, over the bound of {schema['maxBytes']}")
            if "nonUtf8Base64" in schema:
                problem = non_utf8_base64_problem(value, schema["nonUtf8Base64"])
                if problem is not None:
                    result.fail(pointer, "nonUtf8Base64", f"{problem} (SPEC-3)")
            if "pattern" in schema and _ecma_pattern(schema["pattern"]).search(value) is None:
                result.fail(pointer, "pattern", f"must match {schema['pattern']}")
        if "maxJsonBytes" in schema:
            size = compact_size(value)
            if size > schema["maxJsonBytes"]:
                result.fail(pointer, "maxJsonBytes", f"is {size} bytes serialized, over the bound of {schema['maxJsonBytes']}")

    def _object_keywords(self, schema: Schema, base: str, value: Dict[str, Any], path: List[Union[str, int]], result: _Result) -> None:
        pointer = json_pointer(path)
        for name in schema.get("required", ()):
            if name not in value:
                result.fail(json_pointer(path + [name]), "required", f"required member {dumps_compact(name)} is missing")
        if "maxProperties" in schema and len(value) > schema["maxProperties"]:
            result.fail(pointer, "maxProperties", f"must have at most {schema['maxProperties']} members")
        if "minProperties" in schema and len(value) < schema["minProperties"]:
            result.fail(pointer, "minProperties", f"must have at least {schema['minProperties']} members")
        if "propertyNames" in schema:
            for name in value:
                inner = self._apply(schema["propertyNames"], base, name, path + [name])
                if not inner.valid:
                    result.fail(json_pointer(path + [name]), "propertyNames", f"member name {dumps_compact(name)} is not allowed")
        properties: Dict[str, Any] = schema.get("properties", {})
        result.defined |= set(properties)
        for name, sub in properties.items():
            if name in value:
                result.member(name, self._apply(sub, base, value[name], path + [name]))
        patterns: Dict[str, Any] = schema.get("patternProperties", {})
        matched: Set[str] = set()
        for source, sub in patterns.items():
            compiled = _ecma_pattern(source)
            for name in value:
                if compiled.search(name) is not None:
                    matched.add(name)
                    result.member(name, self._apply(sub, base, value[name], path + [name]))
        if "additionalProperties" in schema:
            extra = schema["additionalProperties"]
            for name in value:
                if name in properties or name in matched:
                    continue
                inner = self._apply(extra, base, value[name], path + [name])
                if inner.valid:
                    result.evaluated.add(name)
                else:
                    result.valid = False
                    if extra is False:
                        result.errors.append(SchemaError(json_pointer(path + [name]), "additionalProperties", f"member {dumps_compact(name)} is not allowed", name))
                    else:
                        result.errors.extend(inner.errors)

    def _array_keywords(self, schema: Schema, base: str, value: List[Any], path: List[Union[str, int]], result: _Result) -> None:
        pointer = json_pointer(path)
        if "minItems" in schema and len(value) < schema["minItems"]:
            result.fail(pointer, "minItems", f"must have at least {schema['minItems']} items")
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            result.fail(pointer, "maxItems", f"must have at most {schema['maxItems']} items")
        prefix: List[Any] = schema.get("prefixItems", [])
        for index, sub in enumerate(prefix[:len(value)]):
            inner = self._apply(sub, base, value[index], path + [index])
            if not inner.valid:
                result.valid = False
                result.errors.extend(inner.errors)
        if "items" in schema:
            for index in range(len(prefix), len(value)):
                inner = self._apply(schema["items"], base, value[index], path + [index])
                if not inner.valid:
                    result.valid = False
                    result.errors.extend(inner.errors)
        if schema.get("uniqueItems") is True:
            seen: Set[str] = set()
            for item in value:
                key = _canonical(item)
                if key in seen:
                    result.fail(pointer, "uniqueItems", "must not hold the same item twice")
                    break
                seen.add(key)

    def _unevaluated(self, schema: Schema, base: str, value: Dict[str, Any], path: List[Union[str, int]], result: _Result) -> None:
        rule = schema["unevaluatedProperties"]
        for name in value:
            if name in result.evaluated:
                continue
            inner = self._apply(rule, base, value[name], path + [name])
            if inner.valid:
                result.evaluated.add(name)
                continue
            result.valid = False
            if rule is False:
                # A defined member whose own subschema failed looks unevaluated
                # (failing subschemas give no annotations): that failure is the error.
                member = None if name in result.defined else name
                result.errors.append(SchemaError(json_pointer(path + [name]), "unevaluatedProperties", f"member {dumps_compact(name)} is not allowed", member))
            else:
                result.errors.extend(inner.errors)


def check_schema_support(document: Any, where: str = "") -> List[str]:
    """Keywords of a schema document this validator does not implement (empty when all are)."""
    problems: List[str] = []
    if isinstance(document, dict):
        for key, item in document.items():
            if key not in _KNOWN:
                problems.append(f"{where}/{key}")
            if key in ("properties", "patternProperties", "$defs"):
                for name, sub in item.items():
                    problems.extend(check_schema_support(sub, f"{where}/{key}/{name}"))
            elif key in ("enum", "const", "required", "type", "examples", "default"):
                continue
            elif isinstance(item, (dict, list)):
                problems.extend(check_schema_support(item, f"{where}/{key}"))
    elif isinstance(document, list):
        for index, item in enumerate(document):
            problems.extend(check_schema_support(item, f"{where}/{index}"))
    return problems

