// Unicode's NFC (data/nfc.hpp) on cases whose answers Unicode's data fixes: composition, canonical
// ordering of marks, blocked composition, singletons and exclusions that stay decomposed, Hangul
// by the algorithm, bytes that are not UTF-8 left as they are. The comparison with JavaScript's
// String.normalize('NFC') on every decomposable character and 2,000 random clusters:
// tests/e2e/tokenizer.sh (Qwen2.5's tokenizer.json).
#include <gtest/gtest.h>

#include "hpctrain/data/nfc.hpp"

using namespace hpctrain;

TEST(Nfc, ComposesOrdersAndBlocksAsUnicodeSays) {
  EXPECT_EQ(nfc("caf"
                "e\u0301"),
            "caf\u00e9");                            // e + acute -> é
  EXPECT_EQ(nfc("\u00e9"), "\u00e9");                // already composed
  EXPECT_EQ(nfc("A\u030a"), "\u00c5");               // A + ring -> Å
  EXPECT_EQ(nfc("\u212b"), "\u00c5");                // Angstrom sign: a singleton, to Å
  EXPECT_EQ(nfc("\u1e0b\u0323"), "\u1e0d\u0307");    // ḋ + dot below: reordered, ḍ composed first
  EXPECT_EQ(nfc("q\u0307\u0323"), "q\u0323\u0307");  // no composite: marks in class order
  EXPECT_EQ(nfc("a\u0323\u0302"), "\u1ead");         // a + dot below + circumflex -> ậ
  EXPECT_EQ(nfc("a\u0302\u0323"), "\u1ead");         // the other order: the same
  EXPECT_EQ(nfc("e\u0301\u0301"), "\u00e9\u0301");   // the second acute is blocked by the first
  EXPECT_EQ(nfc("\u0958"), "\u0915\u093c");          // a composition exclusion stays decomposed
  EXPECT_EQ(nfc("\u0915\u093c"), "\u0915\u093c");
  EXPECT_EQ(nfc("\u0344"), "\u0308\u0301");        // a non-starter decomposition
  EXPECT_EQ(nfc("\u1100\u1161\u11a8"), "\uac01");  // Hangul L V T -> 각
  EXPECT_EQ(nfc("\uac00\u11a8"), "\uac01");        // LV + T
  EXPECT_EQ(nfc("\uac01"), "\uac01");
  EXPECT_EQ(nfc("\u0301e"), "\u0301e");    // a leading mark composes with nothing
  EXPECT_EQ(nfc("e \u0301"), "e \u0301");  // nor across a space
}

TEST(Nfc, LeavesBytesThatAreNotUtf8AndSaysWhenItCannotChange) {
  EXPECT_EQ(nfc(std::string("e\xff\xcc\x81", 4)), std::string("e\xff\xcc\x81", 4));  // nothing across a bad byte
  EXPECT_EQ(nfc(std::string("\xcc", 1)), std::string("\xcc", 1));                    // a cut sequence
  EXPECT_EQ(nfc(std::string("\xed\xa0\x80", 3)), std::string("\xed\xa0\x80", 3));    // a surrogate
  EXPECT_FALSE(nfc_may_change("plain ASCII, and Latin-1: \u00e9\u00e8\u00ff"));
  EXPECT_TRUE(nfc_may_change("e\u0301"));
  // Negative control: a text NFC changes is not returned as it is.
  EXPECT_NE(nfc("e\u0301"), "e\u0301");
}
