// Apollo Client with its default cache (InMemoryCache, no typePolicies, no possibleTypes)
// against a running marketd: pools and NFTs read through different queries must land in one
// cache entry each, keyed by __typename and the global id, so an update to one shows in every
// query that holds it. Usage: node normalize.mjs http://127.0.0.1:PORT COLLECTION_SLUG
// Prints what it checked and exits 1 on the first difference.
import { ApolloClient, HttpLink, InMemoryCache, gql } from "@apollo/client";

const [base, slug] = process.argv.slice(2);
if (!base || !slug) {
  console.error("usage: node normalize.mjs BASE_URL COLLECTION_SLUG");
  process.exit(2);
}

function check(ok, what, detail) {
  if (!ok) {
    console.error(`FAIL: ${what}${detail === undefined ? "" : ": " + JSON.stringify(detail)}`);
    process.exit(1);
  }
  console.log(`ok: ${what}`);
}

const cache = new InMemoryCache();
const client = new ApolloClient({ link: new HttpLink({ uri: `${base}/graphql` }), cache });

// The lists, as a dashboard first reads them.
const lists = gql`
  query Lists($slug: String!) {
    pools(first: 5) { edges { node { id poolId feeBps } } }
    collection(slug: $slug) { id collectionId nfts(first: 3) { edges { node { id contractId serial owner } } } }
  }
`;
const { data } = await client.query({ query: lists, variables: { slug } });
const pool = data.pools.edges[0].node;
const nft = data.collection.nfts.edges[0].node;
check(pool && nft, "the lists give a pool and an NFT", data);

const poolKey = cache.identify(pool);
const nftKey = cache.identify(nft);
check(poolKey === `Pool:${pool.id}`, "the default cache keys a pool by __typename and id", poolKey);
check(nftKey === `NFT:${nft.id}`, "the default cache keys an NFT by __typename and id", nftKey);

const stored = cache.extract();
check(stored[poolKey]?.poolId === pool.poolId, "the pool is an entry of its own", stored[poolKey]);
check(stored[nftKey]?.contractId === nft.contractId, "the NFT is an entry of its own", stored[nftKey]);
const poolsField = Object.keys(stored.ROOT_QUERY).find((k) => k.startsWith("pools"));
check(stored.ROOT_QUERY[poolsField].edges[0].node.__ref === poolKey, "the list holds a reference to the pool, not a copy",
  stored.ROOT_QUERY[poolsField].edges[0]);

// The same objects through other fields: one by its REST id, one by node(id:).
const details = gql`
  query Details($poolId: ID!, $nftId: ID!) {
    pool(id: $poolId) { id base quote }
    node(id: $nftId) { __typename id ... on NFT { name serial } }
  }
`;
const more = await client.query({ query: details, variables: { poolId: pool.poolId, nftId: nft.id } });
check(more.data.node?.id === nft.id && more.data.node.__typename === "NFT", "node(id:) gives the NFT back by its id", more.data.node);

const afterDetails = cache.extract();
check(Object.keys(afterDetails).filter((k) => k.startsWith("Pool:")).length === data.pools.edges.length,
  "reading the pool again made no second entry", Object.keys(afterDetails));
const merged = cache.readFragment({ id: poolKey, fragment: gql`fragment P on Pool { poolId feeBps base quote }` });
check(merged?.poolId === pool.poolId && merged.base && merged.quote && merged.feeBps === pool.feeBps,
  "the pool's entry merges the fields both queries read", merged);
const nftMerged = cache.readFragment({ id: nftKey, fragment: gql`fragment N on NFT { contractId owner name serial }` });
check(nftMerged?.contractId === nft.contractId && nftMerged.name, "the NFT's entry merges the fields both queries read", nftMerged);

// An update to the entry shows in the list query that holds it, with no refetch.
cache.modify({ id: nftKey, fields: { owner: () => "someone-else" } });
const listed = client.readQuery({ query: lists, variables: { slug } });
check(listed.collection.nfts.edges[0].node.owner === "someone-else", "an update to the NFT's entry shows in the list");

console.log(JSON.stringify({ pool: poolKey, nft: nftKey, entries: Object.keys(cache.extract()).length }));
