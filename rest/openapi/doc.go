// Package openapi reads Parley's OpenAPI 3.1 document (rest/openapi.yaml)
// and checks requests and responses against it: which operations it
// describes, and whether a JSON body fits a response's schema, with a
// validator of the JSON Schema subset the document uses (type, with
// "null" and type lists; properties, required, additionalProperties:
// false; items; enum; minimum, maximum; minLength, maxLength; pattern;
// oneOf; local $ref). The tests of rest and cmd/parley use it; the server
// does not.
package openapi
