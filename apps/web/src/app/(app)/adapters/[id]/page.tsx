"use client";
// /adapters/<id>: one adapter of the team.
import { useParams } from "next/navigation";
import { AdapterDetails } from "../../../../components/adapters/adapter-details.tsx";

export default function AdapterPage() {
  const { id } = useParams<{ id: string }>();
  return <AdapterDetails adapterId={id} />;
}
