//! Pure text functions beside the layout: custom vocabulary, the clean version, transcript text.
