mod boundary;
mod header;
mod version;
