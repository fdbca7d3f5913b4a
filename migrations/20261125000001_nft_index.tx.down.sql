DROP INDEX nft_activity_update;
