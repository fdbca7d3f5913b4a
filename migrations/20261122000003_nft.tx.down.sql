DROP TABLE nft_activity;
--bun:split
DROP TABLE collection_owners;
--bun:split
DROP TABLE nft_traits;
--bun:split
DROP TABLE nft_items;
--bun:split
DROP TABLE listings;
--bun:split
DROP TABLE nfts;
--bun:split
DROP TABLE phase_mints;
--bun:split
DROP TABLE phase_allow;
--bun:split
DROP TABLE mint_phases;
--bun:split
DROP TABLE collection_items;
--bun:split
DROP TABLE collections;
