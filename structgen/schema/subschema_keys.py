"""Where a schema object holds subschemas: the keywords whose values are schemas, by shape."""

#: Keywords whose value is one subschema.
SCHEMA_KEYWORDS = (
    "additionalProperties",
    "additionalItems",
    "items",
    "not",
    "if",
    "then",
    "else",
    "contains",
    "propertyNames",
    "unevaluatedProperties",
    "unevaluatedItems",
    "contentSchema",
)
#: Keywords whose value is an array of subschemas.
SCHEMA_ARRAY_KEYWORDS = ("allOf", "anyOf", "oneOf", "prefixItems", "items")
#: Keywords whose value maps names to subschemas.
SCHEMA_MAP_KEYWORDS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies")
