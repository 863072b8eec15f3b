mod batch;
mod boundary;
mod header;
mod version;
