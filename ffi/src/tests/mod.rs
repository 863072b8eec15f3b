mod header;
