"""What a registration gives back: the report (`report` builds it, `report_read` reads the runs,
`report_markdown` writes results.md and the document's section), the provenance checks (`provenance`),
publishing to Hugging Face (`publish`), the real read in results.md (`report_real`), importing real trials
(`real_import`) and the fontaine-prereg command (`cli`). The top floor of prereg/."""
