// A small structure-aware mutator for protobuf messages, for targets whose
// input is a message (libprotobuf-mutator does this; Debian 12 does not
// package it). The fuzz input stays the message's wire format, so seeds are
// real request bodies and every finding replays as one. A mutation parses
// the input, changes one field somewhere in the message tree through
// protobuf's reflection — a number to an edge or a random value, an enum to
// a known or unknown value, a string to a dictionary word, a run of one, or
// a byte-mutated copy, a repeated field grown, shrunk or changed, a nested
// message changed or cleared, a oneof switched — and serializes it again.
// One mutation in eight works on the bytes instead (libFuzzer's own), so
// the parser sees broken wire format as well.
//
//   extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size,
//                                             size_t max_size, unsigned seed) {
//     return tandem::fuzz::mutateProto<MyMessage>(data, size, max_size, seed, kWords);
//   }
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <span>
#include <string>
#include <string_view>

#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

namespace tandem::fuzz {

class ProtoMutator {
 public:
  // `words`: strings worth trying in string fields (field values the code
  // under test treats specially).
  ProtoMutator(unsigned seed, std::span<const std::string_view> words, size_t max_bytes)
      : rng_(seed), words_(words), max_bytes_(max_bytes) {}

  // changes one field of `message` or of a message inside it.
  void mutate(google::protobuf::Message* message, int depth = 0) {
    const google::protobuf::Descriptor* type = message->GetDescriptor();
    if (type->field_count() == 0) return;
    const google::protobuf::FieldDescriptor* field = type->field(pick(type->field_count()));
    const google::protobuf::Reflection* r = message->GetReflection();
    const bool nested = field->cpp_type() == google::protobuf::FieldDescriptor::CPPTYPE_MESSAGE;
    if (field->is_repeated()) {
      const int n = r->FieldSize(*message, field);
      switch (pick(4)) {
        case 0:
          if (n > 0) {
            r->RemoveLast(message, field);
            return;
          }
          [[fallthrough]];
        case 1:  // grow
          if (nested) {
            mutate(r->AddMessage(message, field), depth + 1);
          } else {
            addScalar(message, field);
          }
          return;
        default:  // change one element
          if (n == 0) return addScalarOrMessage(message, field, depth);
          if (nested) return mutate(r->MutableRepeatedMessage(message, field, pick(n)), depth + 1);
          // a new value in place of element i: added last, swapped in, the old one dropped.
          addScalar(message, field);
          r->SwapElements(message, field, pick(n), n);
          r->RemoveLast(message, field);
          return;
      }
    }
    if (nested) {
      if (pick(6) == 0 || depth > 8) return r->ClearField(message, field);
      return mutate(r->MutableMessage(message, field), depth + 1);
    }
    setScalar(message, field);
  }

 private:
  int pick(int n) { return static_cast<int>(rng_() % static_cast<uint64_t>(n)); }

  void addScalarOrMessage(google::protobuf::Message* m, const google::protobuf::FieldDescriptor* f,
                          int depth) {
    if (f->cpp_type() == google::protobuf::FieldDescriptor::CPPTYPE_MESSAGE) {
      mutate(m->GetReflection()->AddMessage(m, f), depth + 1);
    } else {
      addScalar(m, f);
    }
  }

  int64_t integer() {
    constexpr int64_t kEdges[] = {0, 1, -1, 2, 16, 255, 256, 65535, 1 << 20,
                                  std::numeric_limits<int32_t>::max(),
                                  std::numeric_limits<int32_t>::min(),
                                  std::numeric_limits<int64_t>::max(),
                                  std::numeric_limits<int64_t>::min()};
    switch (pick(3)) {
      case 0: return kEdges[pick(std::size(kEdges))];
      case 1: return pick(1024) - 8;
      default: return static_cast<int64_t>(rng_());
    }
  }
  double real() {
    constexpr double kEdges[] = {0.0, -0.0, 1.0, -1.0, 0.5, 2.0, 1e-30, 1e30, 1e300,
                                 std::numeric_limits<double>::infinity(),
                                 -std::numeric_limits<double>::infinity(),
                                 std::numeric_limits<double>::quiet_NaN()};
    if (pick(2) == 0) return kEdges[pick(std::size(kEdges))];
    return std::uniform_real_distribution<double>(-4.0, 4.0)(rng_);
  }
  int enumValue(const google::protobuf::FieldDescriptor* f) {
    const google::protobuf::EnumDescriptor* e = f->enum_type();
    if (pick(4) == 0) return static_cast<int>(integer());  // an unknown value
    return e->value(pick(e->value_count()))->number();
  }
  // a string: a word, a run of one, empty, or a byte-mutated copy of `now`.
  std::string text(const std::string& now) {
    switch (pick(5)) {
      case 0: return "";
      case 1: {
        std::string_view word = words_.empty() ? "x" : words_[pick(static_cast<int>(words_.size()))];
        std::string run;
        const size_t times = 1 + pick(2000);
        while (run.size() < max_bytes_ / 2 && run.size() < word.size() * times) run += word;
        return run;
      }
      case 2: {
        std::string bytes = now;
        bytes.resize(now.size() + 64);  // room to grow; the message's size is checked at the end
        const size_t n = LLVMFuzzerMutate(reinterpret_cast<uint8_t*>(bytes.data()), now.size(),
                                          bytes.size());
        bytes.resize(n);
        return bytes;
      }
      default:
        return std::string(words_.empty() ? "x" : words_[pick(static_cast<int>(words_.size()))]);
    }
  }

  void setScalar(google::protobuf::Message* m, const google::protobuf::FieldDescriptor* f) {
    using FD = google::protobuf::FieldDescriptor;
    const google::protobuf::Reflection* r = m->GetReflection();
    switch (f->cpp_type()) {
      case FD::CPPTYPE_INT32: return r->SetInt32(m, f, static_cast<int32_t>(integer()));
      case FD::CPPTYPE_INT64: return r->SetInt64(m, f, integer());
      case FD::CPPTYPE_UINT32: return r->SetUInt32(m, f, static_cast<uint32_t>(integer()));
      case FD::CPPTYPE_UINT64: return r->SetUInt64(m, f, static_cast<uint64_t>(integer()));
      case FD::CPPTYPE_FLOAT: return r->SetFloat(m, f, static_cast<float>(real()));
      case FD::CPPTYPE_DOUBLE: return r->SetDouble(m, f, real());
      case FD::CPPTYPE_BOOL: return r->SetBool(m, f, pick(2) == 0);
      case FD::CPPTYPE_ENUM: return r->SetEnumValue(m, f, enumValue(f));
      case FD::CPPTYPE_STRING: return r->SetString(m, f, text(r->GetString(*m, f)));
      case FD::CPPTYPE_MESSAGE: return;
    }
  }
  void addScalar(google::protobuf::Message* m, const google::protobuf::FieldDescriptor* f) {
    using FD = google::protobuf::FieldDescriptor;
    const google::protobuf::Reflection* r = m->GetReflection();
    switch (f->cpp_type()) {
      case FD::CPPTYPE_INT32: return r->AddInt32(m, f, static_cast<int32_t>(integer()));
      case FD::CPPTYPE_INT64: return r->AddInt64(m, f, integer());
      case FD::CPPTYPE_UINT32: return r->AddUInt32(m, f, static_cast<uint32_t>(integer()));
      case FD::CPPTYPE_UINT64: return r->AddUInt64(m, f, static_cast<uint64_t>(integer()));
      case FD::CPPTYPE_FLOAT: return r->AddFloat(m, f, static_cast<float>(real()));
      case FD::CPPTYPE_DOUBLE: return r->AddDouble(m, f, real());
      case FD::CPPTYPE_BOOL: return r->AddBool(m, f, pick(2) == 0);
      case FD::CPPTYPE_ENUM: return r->AddEnumValue(m, f, enumValue(f));
      case FD::CPPTYPE_STRING: return r->AddString(m, f, text(""));
      case FD::CPPTYPE_MESSAGE: return;
    }
  }
  std::mt19937_64 rng_;
  std::span<const std::string_view> words_;
  size_t max_bytes_;
};

// libFuzzer's custom mutator for a target whose input is a `Message`:
// mutates data[0, size) in place (at most max_size bytes) and returns the
// new size. Input that does not parse starts from an empty message.
template <typename Message>
size_t mutateProto(uint8_t* data, size_t size, size_t max_size, unsigned seed,
                   std::span<const std::string_view> words) {
  if (seed % 8 == 0) return LLVMFuzzerMutate(data, size, max_size);
  Message message;
  if (!message.ParseFromArray(data, static_cast<int>(size))) message.Clear();
  ProtoMutator mutator(seed, words, max_size);
  for (int n = 1 + static_cast<int>(seed % 3); n > 0; --n) mutator.mutate(&message);
  const std::string bytes = message.SerializeAsString();
  if (bytes.size() > max_size) return LLVMFuzzerMutate(data, size, max_size);
  std::memcpy(data, bytes.data(), bytes.size());
  return bytes.size();
}

}  // namespace tandem::fuzz
