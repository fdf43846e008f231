// The official Open-RPC tooling over rpc_schema/ (run by tests/rpc/test_openrpc_official.py).
//   node check.mjs FILE            validate against the OpenRPC meta-schema and dereference every $ref
//   node check.mjs --validate FILE validate only (the source documents, whose file references the
//                                  tool resolves against the working directory, not the referring file)
// Prints {"ok": true, "methods": N} or exits 1 with the tool's own message.
import { readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import utils from "@open-rpc/schema-utils-js";

const { parseOpenRPCDocument, validateOpenRPCDocument } = utils;
const validateOnly = process.argv[2] === "--validate";
const file = resolve(process.argv[validateOnly ? 3 : 2]);
const raw = JSON.parse(readFileSync(file, "utf8"));
try {
  const valid = validateOpenRPCDocument(raw);
  if (valid !== true) throw valid;
  let doc = raw;
  if (!validateOnly) {
    process.chdir(dirname(file));
    doc = await parseOpenRPCDocument(raw, { validate: true, dereference: true });
    if (JSON.stringify(doc).includes('"$ref"')) throw new Error("a $ref is left after dereferencing");
  }
  process.stdout.write(JSON.stringify({ ok: true, methods: doc.methods.length }) + "\n");
} catch (err) {
  process.stderr.write(`${file}: ${err && err.message ? err.message : JSON.stringify(err)}\n`);
  process.exit(1);
}
