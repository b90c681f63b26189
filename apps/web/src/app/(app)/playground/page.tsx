"use client";
// The playground: sample from a base model or an adapter's version and read the tokens.
import { Playground } from "../../../components/playground/playground.tsx";

export default function PlaygroundPage() {
  return <Playground />;
}
