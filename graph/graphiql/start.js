// Starts GraphiQL against this server's /graphql; every asset is served by marketd itself.
const defaultQuery = `# marketd's read API: collections, their NFTs, and each NFT's history.
{
  collections(sort: VOLUME, first: 5) {
    edges {
      node { id slug name floorPrice listedCount volume }
    }
    pageInfo { hasNextPage endCursor }
  }
}
`;
ReactDOM.createRoot(document.getElementById('graphiql')).render(
  React.createElement(GraphiQL, {
    fetcher: GraphiQL.createFetcher({ url: '/graphql' }),
    defaultQuery: defaultQuery,
  }),
);
