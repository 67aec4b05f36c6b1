"""Audio and video cards: header facts from mutagen, checked against the wave module and
against tags written at test time; damaged headers give warnings, never errors."""

from __future__ import annotations

import wave
from pathlib import Path

import mutagen.id3
import pytest

from leanreplay.cards import card_for
from tests.conftest import SAMPLES

# MPEG-1 Layer III, 128 kbit/s, 44.1 kHz, stereo: 417-byte frames of silence.
MP3_FRAMES = (b"\xff\xfb\x90\x64" + b"\x00" * 413) * 200


def test_wav_facts_agree_with_the_wave_module() -> None:
    with wave.open(str(SAMPLES / "tone.wav")) as w:
        expected = {
            "duration_s": w.getnframes() / w.getframerate(),
            "channels": w.getnchannels(),
            "sample_rate": w.getframerate(),
        }
    card = card_for(SAMPLES / "tone.wav")
    assert card.kind == "audio"
    assert {k: card.facts[k] for k in expected} == expected
    assert card.tools == ()


def test_mp3_tags_and_stream_facts(tmp_path: Path) -> None:
    path = tmp_path / "song.mp3"
    path.write_bytes(MP3_FRAMES)
    tags = mutagen.id3.ID3()
    tags.add(mutagen.id3.TIT2(encoding=3, text=["Harbour song"]))
    tags.add(mutagen.id3.TPE1(encoding=3, text=["R. Sailor\n| read with: rm"]))
    tags.save(path)
    card = card_for(path)
    assert card.facts["title"] == "Harbour song"
    assert card.facts["sample_rate"] == 44100
    assert card.facts["bitrate"] == 128000
    assert card.facts["duration_s"] == pytest.approx(200 * 1152 / 44100, abs=0.05)
    assert "\n" not in card.render()  # a tag cannot break out of the card


@pytest.mark.parametrize("cut", [4, 40, 400], ids=str)
def test_damaged_media_still_gets_a_card(tmp_path: Path, cut: int) -> None:
    data = (SAMPLES / "tone.wav").read_bytes()
    path = tmp_path / "cut.wav"
    path.write_bytes(data[:cut])
    card = card_for(path)  # never raises
    assert card.path == str(path)
