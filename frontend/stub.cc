// STUB: to be replaced by the importer.
