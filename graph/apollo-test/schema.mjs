// The SDL marketd serves, read as code generators read it: graphql-js's buildSchema must
// accept it, and it must show the Node interface with its six types and the enums.
// Usage: node schema.mjs http://127.0.0.1:PORT. Exits 1 on the first difference.
import { buildSchema, isEnumType, isInterfaceType } from "graphql";

const [base] = process.argv.slice(2);
const res = await fetch(`${base}/graphql/schema.graphql`);
const sdl = await res.text();
function check(ok, what, detail) {
  if (!ok) {
    console.error(`FAIL: ${what}${detail === undefined ? "" : ": " + JSON.stringify(detail)}`);
    process.exit(1);
  }
  console.log(`ok: ${what}`);
}
check(res.ok, "GET /graphql/schema.graphql answers", res.status);
const schema = buildSchema(sdl);
const node = schema.getType("Node");
check(isInterfaceType(node), "Node is an interface");
const implementers = schema.getPossibleTypes(node).map((t) => t.name).sort();
check(JSON.stringify(implementers) === JSON.stringify(["Collection", "Intent", "LPQuote", "NFT", "Offer", "Pool"]),
  "Node's types are the six", implementers);
for (const name of ["NFTEventKind", "LPQuoteSide", "IntentStatus", "PreapprovalKind", "RewardKind"]) {
  const t = schema.getType(name);
  check(isEnumType(t) && t.getValues().every((v) => v.description), `${name} is an enum with every value described`);
}
check(schema.description && schema.getQueryType().getFields().node.description, "descriptions survive the file");
