#!/usr/bin/env bash
# images.sh MPIRUN TRAINER SOURCE_DIR: hpctrain-data import-images on JPEG and PNG files made here
# with Pillow (RGB and grayscale, sizes from 17x90 to 128x96, three classes in subfolders):
# - every stored image equals Pillow's open().convert("RGB").resize(BILINEAR) with torchvision's
#   Resize(size) + CenterCrop(size) geometry, byte for byte; --channels 1 equals convert("L");
# - 2 ranks write the same dataset as 1 rank (shards k by rank k % 2), a shuffled val split;
# - a CSV of file,label gives the subfolders' labels;
# - a file that does not decode (named, exit 2, one line), a PNG of 100,000 x 100,000 pixels in
#   1 kB (refused before decoding, as Pillow's DecompressionBombError), a folder without images, shards there
#   already without --force;
# - import-cifar: CIFAR-10's binary records, labels and images in order; a partial record refused;
# - training with [data] random_crop_pad and random_flip: 1 rank and 2 ranks log the same losses
#   (draws keyed by sample, not rank), which differ from the run without augmentation.
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
e2e_start "$@"  # $mpirun $trainer $src, the working directory $src, $tmp (removed at exit)
py=/usr/bin/python3
data_tool=$(dirname "$trainer")/hpctrain-data
$py -c "import PIL" 2>/dev/null || { echo "SKIP: python3-pil missing: run tools/setup.sh"; exit 77; }
cd "$tmp" || exit 1
$py - <<'PY'
import os
import numpy as np
from PIL import Image
rng = np.random.default_rng(3)
sizes = [(40, 30), (50, 64), (33, 33), (17, 90), (128, 96), (61, 45)]
rows = ["file,label"]
for c, cls in enumerate(["cat", "dog", "zebra"]):
    os.makedirs(f"imgs/{cls}", exist_ok=True)
    for i, (w, h) in enumerate(sizes * 2):
        yy, xx = np.mgrid[0:h, 0:w]
        img = np.stack([(xx * 255 // w + 80 * c) % 256, (yy * 255 // h + 60 * c) % 256, ((xx + yy) * 7 + i * 30) % 256], -1)
        img = np.clip(img + rng.integers(-20, 20, img.shape), 0, 255).astype(np.uint8)
        im = Image.fromarray(img)
        if i % 6 == 2:
            im = im.convert("L")
        name = f"{cls}/{i:02d}." + ("png" if i % 2 else "jpg")
        im.save("imgs/" + name, **({} if i % 2 else {"quality": 90}))
        rows.append(f"{name},{cls}")
open("labels.csv", "w").write("\n".join(rows) + "\n")
os.makedirs("bad/a", exist_ok=True)
open("bad/a/broken.jpg", "wb").write(b"\xff\xd8\xff\xe0 not really a jpeg")
os.makedirs("empty/a", exist_ok=True)
PY
out=$("$data_tool" import-images --input imgs --out plain --size 16 --val-fraction 0 --shuffle-seed 0 2>&1)
check "import-images: exit 0 ($(tail -1 <<<"$out"))" test $? -eq 0 -a -f plain/train/part-00000.h5
check "... a progress line" grep -q "^import-images: rank 0 decoded 36 of its 36 images" <<<"$out"
cat >pillow.py <<'PY'
import glob, sys
import h5py, numpy as np
from PIL import Image
root, mode, s = sys.argv[1], sys.argv[2], 16
files = sorted(glob.glob("imgs/*/*"))  # (classes, then files, sorted: the listing's order)
f = h5py.File(root + "/train/part-00000.h5")
x, y = f["samples"][...], f["labels"][...]
assert x.dtype == np.uint8 and x.shape == (36, 1 if mode == "L" else 3, s, s), x.shape
assert list(y) == [0] * 12 + [1] * 12 + [2] * 12 and f.attrs["num_classes"] == 3
assert abs(f.attrs["scale"] - 1 / 255) < 1e-12 and f.attrs["offset"] == 0
for i, name in enumerate(files):
    im = Image.open(name).convert(mode)
    w, h = im.size
    nw, nh = (s, int(s * h / w)) if w <= h else (int(s * w / h), s)  # torchvision's Resize(s)
    r = im.resize((nw, nh), Image.BILINEAR)
    left, top = int(round((nw - s) / 2.0)), int(round((nh - s) / 2.0))  # CenterCrop(s)
    ref = np.asarray(r.crop((left, top, left + s, top + s))).reshape(s, s, -1).transpose(2, 0, 1)
    assert np.array_equal(ref, x[i]), (name, int(np.abs(ref.astype(int) - x[i]).max()))
PY
check "... every image equals Pillow's decode, BILINEAR resize and center crop, byte for byte" $py pillow.py plain RGB
"$data_tool" import-images --input imgs --out gray --size 16 --channels 1 --val-fraction 0 --shuffle-seed 0 \
  >/dev/null 2>&1
check "... --channels 1 equals Pillow's convert(\"L\")" $py pillow.py gray L

"$data_tool" import-images --input imgs --out one --size 16 --shards 2 >/dev/null 2>&1
out=$("$mpirun" -q -np 2 --oversubscribe --bind-to none "$data_tool" import-images --input imgs --out two --size 16 2>&1)
check "2 ranks: exit 0 ($(tail -1 <<<"$out"))" grep -q "36 decoded by 2 rank(s)" <<<"$out"
same() {  # dataset dataset: the same samples and labels in every split, in order
  $py - "$1" "$2" <<'PY'
import glob, sys
import h5py, numpy as np
def split(root, name):
    fs = [h5py.File(f) for f in sorted(glob.glob(f"{root}/{name}/*.h5"))]
    return np.concatenate([f["samples"][...] for f in fs]), np.concatenate([f["labels"][...] for f in fs])
for name in ("train", "val"):
    (xa, ya), (xb, yb) = split(sys.argv[1], name), split(sys.argv[2], name)
    assert np.array_equal(xa, xb) and np.array_equal(ya, yb), name
assert len(split(sys.argv[1], "val")[1]) == 3 and sorted(split(sys.argv[1], "train")[1]) != list(split(sys.argv[1], "train")[1])
PY
}
check "... the same dataset as 1 rank (shuffled, 3 images in val)" same one two
"$data_tool" import-images --input imgs --labels labels.csv --out csv --size 16 --shards 2 >/dev/null 2>&1
check "--labels CSV (file,label): the subfolders' dataset" same one csv

# CIFAR-10's binary layout: records of a label byte and a [3, 32, 32] image.
$py -c "
import numpy as np
rng = np.random.default_rng(1)
for b, n in ((1, 30), (2, 20)):
    recs = np.concatenate([rng.integers(0, 10, (n, 1)), rng.integers(0, 256, (n, 3072))], 1).astype(np.uint8)
    recs.tofile(f'data_batch_{b}.bin')
open('short.bin', 'wb').write(bytes(3000))"
out=$("$data_tool" import-cifar --input data_batch_1.bin data_batch_2.bin --out cifar --val-count 5 2>&1)
check "import-cifar: $out" test $? -eq 0
check "... the records' labels and images, in order (the last 5 in val)" $py -c "
import h5py, numpy as np
recs = np.concatenate([np.fromfile(f'data_batch_{b}.bin', np.uint8).reshape(-1, 3073) for b in (1, 2)])
t, v = h5py.File('cifar/train/part-00000.h5'), h5py.File('cifar/val/part-00000.h5')
x = np.concatenate([t['samples'][...], v['samples'][...]]); y = np.concatenate([t['labels'][...], v['labels'][...]])
assert x.shape == (50, 3, 32, 32) and len(v['labels']) == 5 and t.attrs['num_classes'] == 10
assert np.array_equal(x.reshape(50, 3072), recs[:, 1:]) and np.array_equal(y, recs[:, 0])"

expect_error() { # description pattern command...
  local what=$1 pattern=$2 msg rc
  shift 2
  "$@" >err.txt 2>&1
  rc=$?
  msg=$(grep -v "^import-images:" err.txt | without_runtime_noise)
  check "$what: exit 2, one line ($rc)" test $rc -eq 2 -a "$(wc -l <<<"$msg")" -eq 1
  check "... says: $pattern" grep -qF "$pattern" <<<"$msg"
}
expect_error "a file that does not decode" "bad/a/broken.jpg: JPEG does not decode" \
  "$data_tool" import-images --input bad --out b1 --val-fraction 0
mkdir -p bomb/a && cp "$src/tests/fuzz/corpus/image/regress_png_bomb.png" bomb/a/big.png  # (100,000 x 100,000 in 1 kB)
expect_error "a decompression bomb (Pillow's bound)" "bomb/a/big.png: 100000 x 100000 pixels, over Pillow's bound" \
  "$data_tool" import-images --input bomb --out b4 --val-fraction 0
expect_error "a CIFAR file of partial records" "short.bin: 3000 bytes is not a whole number of 3073-byte CIFAR-10 records" \
  "$data_tool" import-cifar --input short.bin --out b3
expect_error "a folder without images" "empty: no .jpg, .jpeg or .png images" \
  "$data_tool" import-images --input empty --out b2
expect_error "shards there already" "one/train already holds shards; remove them or pass --force" \
  "$data_tool" import-images --input imgs --out one

printf '%s\n' "[run]" "out_dir = aug1" "[data]" "path = one" "random_crop_pad = 2" "random_flip = true" "[model]" \
  "layers = conv(8, 3, pad=1) relu maxpool(2) flatten dense(3)" "[train]" "global_batch = 8" "steps = 12" \
  "eval_every = 0" "[log]" "log_every = 3" "tensorboard = false" "[optim]" "lr = 0.05" >aug.ini
train() { "$mpirun" -q -np "$1" --oversubscribe --bind-to none "$trainer" aug.ini "${@:2}" >/dev/null 2>&1; }
train 1
train 2 --set run.out_dir=aug2
train 1 --set run.out_dir=plainrun --set data.random_crop_pad=0 --set data.random_flip=false
loss() { awk -F, 'NR > 1 {printf "%s ", $4}' "$1/metrics.csv"; }
check "augmented training: 1 and 2 ranks log the same losses ($(loss aug1))" $py -c "
a, b = [float(v) for v in '$(loss aug1)'.split()], [float(v) for v in '$(loss aug2)'.split()]
assert len(a) == len(b) >= 4 and all(abs(x - y) <= 1e-5 * max(1, abs(y)) for x, y in zip(a, b)), (a, b)"
check "... which are not the losses without augmentation ($(loss plainrun))" test "$(loss aug1)" != "$(loss plainrun)"
out=$("$mpirun" -q -np 1 "$trainer" aug.ini --set data.path=csv --set model.layers="flatten dense(3)" \
  --set data.random_crop_pad=20 --dry-run 2>&1)
check "random_crop_pad larger than the images: one line" grep -q "random_crop_pad = 20 exceeds the images' 16 x 16" <<<"$out"
finish
