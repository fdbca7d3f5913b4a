// GraphQL Inspector's completion handler for .ci/contract (graphql-inspector diff --onComplete).
// It prints one line per breaking change, "breaking <coordinate>": the schema coordinate
// Inspector gives the change (Collection.image, NFTEventKind.LISTED, Query.collection.id), or
// for a change of the schema itself the change's type. A removed object or interface field, or
// a removed enum value, that the old schema did not mark @deprecated also gets a line
// "undeprecated <coordinate>": it went without the release of notice clients are promised.
module.exports = function report({ breakingChanges }) {
  for (const change of breakingChanges) {
    const coordinate = change.path || change.type;
    console.log(`breaking ${coordinate}`);
    if (
      (change.type === 'FIELD_REMOVED' && !change.meta.isRemovedFieldDeprecated) ||
      (change.type === 'ENUM_VALUE_REMOVED' && !change.meta.isEnumValueDeprecated)
    ) {
      console.log(`undeprecated ${coordinate}`);
    }
  }
};
