#!/usr/bin/env python3
"""Validate JSON files against a hubcast schema with the standard `jsonschema` package.

Prints one line per file, `valid <path>` or `invalid <path>: <reason>`, so other validators
(the Swift one in the tests) can be compared with it. Exit 0 unless the schema itself is broken.
"""
import json
import sys

import jsonschema


def reject_constant(name):
    raise ValueError(f"{name} is not JSON")


def main():
    if len(sys.argv) < 3:
        print("usage: validate.py SCHEMA FILE...", file=sys.stderr)
        return 2
    with open(sys.argv[1], encoding="utf-8") as f:
        schema = json.load(f)
    validator_class = jsonschema.validators.validator_for(schema)
    validator_class.check_schema(schema)
    validator = validator_class(schema)
    for path in sys.argv[2:]:
        try:
            with open(path, encoding="utf-8") as f:
                instance = json.load(f, parse_constant=reject_constant)
        except (ValueError, UnicodeDecodeError) as error:
            print(f"invalid {path}: not JSON: {error}")
            continue
        error = jsonschema.exceptions.best_match(validator.iter_errors(instance))
        print(f"valid {path}" if error is None else f"invalid {path}: {error.message[:200]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
