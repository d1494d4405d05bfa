//! Extractive content analysis: highlights (central sentences) and chapters (topic segments).
