//! Media handling with ffprobe and ffmpeg: probing, and extraction of 16 kHz mono PCM.
